//! Embedding on real text, printed as a table (`cargo bench --bench embed`; `-- --quick` for
//! fewer texts, `-- --busy` to measure with two other busy threads too (`--busy-only`: only
//! then), `-- --reindex N` to add a whole-process `git neo reindex` of N long records).
//!
//! Needs the real model (scripts/install-model.sh). The texts are not ours: paragraphs of the
//! READMEs of the crates in the local cargo registry cache, as short texts (one paragraph of one
//! to three sentences) and long ones (consecutive paragraphs merged to about 300 tokens). Each
//! configuration runs in a child process of its own, so its peak RSS (VmHWM) is its own:
//! - `before`: fastembed as git-neo drove it first (f32 products, 512-token window, unsorted
//!   batches of 64, ONNX Runtime's default spin-waiting);
//! - `raw-256`: raw fastembed at git-neo's settings (f32 products, 256-token window, same threads,
//!   no spinning), unsorted batches of 64: the baseline the pipeline is held to;
//! - `f32`: `FastEmbedder::embed` with the f32 products (tokenised first, sorted, token-budget
//!   batches), as git-neo ran the model before its products went to int8;
//! - `git-neo`: `FastEmbedder::embed` (int8 products, one text per call);
//! - `no-arena`: the same without ONNX Runtime's memory arena and spinning within a call, as the
//!   background server and `git neo mcp` run it;
//! - with `--busy`, the same with two other threads spinning (a compiler or an editor).
//!
//! `-- --queries`: one short text per call, as recall embeds its query, p50 latency per
//! configuration (intra-op threads, spin-waiting, arena): what a warm recall pays the model
//! (`--busy N`: with N other threads spinning beside).

// Tests and benches print, read the environment and run processes freely (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

use std::process::Command;
use std::time::Instant;

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn paths_for_load() -> git_neo::embed::ModelPaths {
    git_neo::embed::ModelPaths::in_cache(&common::cache_root())
}

/// Threads that keep cores busy beside a measurement (a compiler or an editor), until stopped.
struct Busy {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<u64>>,
}

impl Busy {
    fn start(n: usize) -> Busy {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    }
                    x
                })
            })
            .collect();
        Busy { stop, threads }
    }

    fn stop(self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// In the child: embed one set with one configuration; print `texts/s peak-MB`.
fn child(config: &str, set: &str, n_short: usize, n_long: usize, busy: bool) {
    use git_neo::embed::{Embedder, FastEmbedder, ModelPaths, RunOptions, Spin};
    let (short, long) = common::registry_corpus(n_short, n_long);
    let texts = if set == "short" { short } else { long };
    let spinners = Busy::start(if busy { 2 } else { 0 });
    let paths = ModelPaths::in_cache(&common::cache_root());
    let mut run = match config {
        "before" => RunOptions { spin: Spin::Always, window: 512, int8: false, ..RunOptions::default() },
        "raw-256" | "f32" => RunOptions { int8: false, ..RunOptions::default() },
        "no-arena" => RunOptions { arena: false, spin: Spin::WithinCall, ..RunOptions::default() },
        _ => RunOptions::default(),
    };
    let args: Vec<String> = std::env::args().collect();
    if let Some(b) = args.iter().position(|a| a == "--budget").and_then(|i| args.get(i + 1)) {
        run.token_budget = b.parse().expect("--budget N");
    }
    if args.iter().any(|a| a == "--spin") {
        run.spin = Spin::Always;
    }
    if texts.is_empty() || args.iter().any(|a| a == "--load-only") {
        let _e = FastEmbedder::load_with(&paths_for_load(), &run).expect("model");
        println!("0 {}", peak_rss_mb());
        return;
    }
    let mut e = FastEmbedder::load_with(&paths, &run).expect("the model is installed (scripts/install-model.sh)");
    let t = Instant::now();
    let n = match config {
        "git-neo" | "no-arena" | "f32" => e.embed(&texts).expect("embed").len(),
        _ => e.raw().embed(&texts, Some(64)).expect("embed").len(),
    };
    let secs = t.elapsed().as_secs_f64();
    spinners.stop();
    println!("{} {}", n as f64 / secs, peak_rss_mb());
}

/// Run `git neo reindex` in a repository of `n` long records; (seconds, peak RSS MB of the child).
// The child is reaped by `wait4` (which also gives its peak RSS), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn whole_reindex(n: usize) -> (f64, f64) {
    use git_neo::record::Timestamp;
    use git_neo::store::{Store, StoreOptions};
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("r");
    std::fs::create_dir_all(&repo).expect("mkdir");
    assert!(Command::new("git").arg("init").arg("-q").current_dir(&repo).status().expect("git").success());
    let (_, long) = common::registry_corpus(0, n);
    let store = Store::discover(&repo, StoreOptions::default()).expect("store");
    let records: Vec<_> = long
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let subject: String = t.chars().take(80).collect();
            common::fact(i, subject.replace('\n', " "), "project".into(), vec![], t.clone())
        })
        .collect();
    store.write_records(&records, "neo: import", &common::who(), Timestamp(1_770_000_000), false).expect("write");
    let child = Command::new(env!("CARGO_BIN_EXE_git-neo"))
        .current_dir(&repo)
        .args(["reindex", "--json"])
        .env("GIT_NEO_CACHE_DIR", common::cache_root())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn git neo reindex");
    let t = Instant::now();
    let (status, peak) = common::wait_peak(&child);
    assert_eq!(status, 0, "git neo reindex failed");
    (t.elapsed().as_secs_f64(), peak)
}

/// The CPU time this process has used so far, in ms.
fn cpu_ms() -> f64 {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage writes a whole rusage into the pointer it is given.
    let u = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr());
        u.assume_init()
    };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(u.ru_utime) + ms(u.ru_stime)
}

/// One short text per call (200 distinct queries), p50 and p90 in ms, per configuration, with
/// `busy` other threads spinning beside, and a pause between calls as a client leaves one; the
/// CPU each call cost (spinning included, measured over the whole run).
fn queries(busy: usize) {
    use git_neo::embed::{Embedder, FastEmbedder, RunOptions, Spin};
    let (short, _) = common::registry_corpus(220, 0);
    let queries: Vec<String> =
        short.iter().map(|t| t.split_whitespace().take(12).collect::<Vec<_>>().join(" ")).collect();
    println!(
        "\n| one query per call ({} queries, {busy} busy threads beside) | p50 ms | p90 ms | CPU ms per call |\n|---|---|---|---|",
        queries.len() - 20
    );
    let spinners = Busy::start(busy);
    let configs: [(&str, RunOptions); 7] = [
        (
            "f32 products, default threads, spinning within a call, no arena (the server before)",
            RunOptions { spin: Spin::WithinCall, arena: false, int8: false, ..RunOptions::default() },
        ),
        ("default threads, arena", RunOptions::default()),
        ("default threads, no arena", RunOptions { arena: false, ..RunOptions::default() }),
        ("1 thread, no arena", RunOptions { threads: Some(1), arena: false, ..RunOptions::default() }),
        (
            "default threads, spinning on after each call, no arena",
            RunOptions { spin: Spin::Always, arena: false, ..RunOptions::default() },
        ),
        (
            "default threads, spinning within a call, no arena (server)",
            RunOptions { spin: Spin::WithinCall, arena: false, ..RunOptions::default() },
        ),
        (
            "1 thread, spinning within a call, no arena",
            RunOptions { threads: Some(1), spin: Spin::WithinCall, arena: false, ..RunOptions::default() },
        ),
    ];
    for (name, run) in configs {
        let mut e = FastEmbedder::load_with(&paths_for_load(), &run).expect("the model is installed");
        let mut cpu = 0.0;
        let mut times: Vec<f64> = queries
            .iter()
            .enumerate()
            .filter_map(|(i, q)| {
                let c = cpu_ms();
                let t = Instant::now();
                e.embed(std::slice::from_ref(q)).expect("embed");
                let took = t.elapsed().as_secs_f64() * 1000.0;
                // A client reads the answer before it asks again: whatever spins on meanwhile
                // is counted with the call.
                std::thread::sleep(std::time::Duration::from_millis(2));
                // The first calls warm the runtime up.
                (i >= 20).then(|| {
                    cpu += cpu_ms() - c;
                    took
                })
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let n = times.len() as f64;
        // The busy threads' CPU is this process's too: only measured without them.
        let per_call = if busy == 0 { format!("{:.2}", cpu / n) } else { "-".into() };
        println!("| {name} | {:.2} | {:.2} | {per_call} |", times[times.len() / 2], times[times.len() * 9 / 10]);
    }
    spinners.stop();
}

mod common;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    if args.iter().any(|a| a == "--queries") {
        let busy = args.iter().position(|a| a == "--busy").and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok());
        queries(busy.unwrap_or(0));
        return;
    }
    let (n_short, n_long) = if quick { (300, 100) } else { (1_000, 400) };
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(&args[i + 1], &args[i + 2], n_short, n_long, args.iter().any(|a| a == "--busy-child"));
        return;
    }
    let (short, long) = common::registry_corpus(n_short, n_long);
    let avg = |v: &[String]| v.iter().map(String::len).sum::<usize>() / v.len().max(1);
    println!(
        "corpus: {} short texts (mean {} bytes), {} long texts (mean {} bytes), from the crates in the cargo registry cache",
        short.len(),
        avg(&short),
        long.len(),
        avg(&long)
    );
    let runs = if quick { 1 } else { 3 };
    let exe = std::env::current_exe().expect("own path");
    println!("\n| set | load | configuration | texts/s (median of {runs}) | peak RSS MB | vs raw-256 |\n|---|---|---|---|---|---|");
    let reindex_only = args.iter().any(|a| a == "--reindex-only");
    for busy in [false, true] {
        if reindex_only {
            continue;
        }
        if busy && !args.iter().any(|a| a == "--busy" || a == "--busy-only") {
            continue;
        }
        if !busy && args.iter().any(|a| a == "--busy-only") {
            continue;
        }
        for set in ["short", "long"] {
            let mut rows = Vec::new();
            for config in ["before", "raw-256", "f32", "git-neo", "no-arena"] {
                let mut results: Vec<(f64, f64)> = (0..runs)
                    .map(|_| {
                        let mut cmd = Command::new(&exe);
                        cmd.args(["--child", config, set]);
                        if quick {
                            cmd.arg("--quick");
                        }
                        if busy {
                            cmd.arg("--busy-child");
                        }
                        let out = cmd.output().expect("run the child");
                        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                        let text = String::from_utf8_lossy(&out.stdout);
                        let mut it = text.split_whitespace().map(|v| v.parse::<f64>().expect("number"));
                        (it.next().expect("rate"), it.next().expect("rss"))
                    })
                    .collect();
                results.sort_by(|a, b| a.0.total_cmp(&b.0));
                rows.push((config, results[results.len() / 2]));
            }
            let raw_rate = rows[1].1 .0;
            for (config, (rate, rss)) in rows {
                println!(
                    "| {set} | {} | {config} | {rate:.1} | {rss:.0} | {:.2}x |",
                    if busy { "2 busy threads" } else { "quiet" },
                    rate / raw_rate
                );
            }
        }
    }
    if let Some(i) = args.iter().position(|a| a == "--reindex" || a == "--reindex-only") {
        let n: usize = args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or(5_000);
        let (secs, rss) = whole_reindex(n);
        println!(
            "\n| whole-process `git neo reindex`, {n} long records | {secs:.1} s | {:.1} records/s | peak RSS {rss:.0} MB |",
            n as f64 / secs
        );
    }
}
