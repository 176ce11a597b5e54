//! The background server's client and its `git neo daemon` commands: one server per user, so that
//! the commands a person or a hook runs on every prompt (`recall`, `add`, `hook prompt`) answer in
//! milliseconds instead of paying for the model load and the memory read on each call.
//!
//! It works the way watchman, the Gradle daemon and sccache do: one process per user, started on
//! demand, serving every repository and worktree of that user, gone when idle, never required
//! for correctness (`server.rs` is the server).
//! - A command that can use it ([`eligible`]) connects to the user's socket. When nothing answers,
//!   it starts the server (`git neo daemon run`, detached; `GIT_NEO_DAEMON_IDLE` seconds until it
//!   exits, default ten minutes) and waits for it: the model loads once per user there, where it
//!   would load for this command alone here, and the answer is the one the command would give by
//!   itself. `GIT_NEO_DAEMON=off` turns all of this off.
//! - The socket lives in a directory only the user can enter (`$XDG_RUNTIME_DIR/git-neo`, else
//!   `/tmp/git-neo-<uid>`, checked to be the user's own and mode 0700); the server checks the
//!   peer's uid on every connection. Its name is a hash of what a server cannot change under
//!   its clients: the git-neo binary itself, the embedder settings and the home the user's git
//!   configuration is read from. A rebuilt binary or another model never talks to a server that
//!   differs, and every request carries the client's version, which the server checks too.
//! - The client sends its arguments, working directory, the work tree it found, the environment
//!   variables git-neo reads, its stdin (for `hook prompt`) and whether its stdout is a terminal;
//!   the server runs the very same command code with output captured, and the client prints it
//!   and exits with its code.
//! - If the server is absent, busy past `GIT_NEO_DAEMON_TIMEOUT`, of another version, or the
//!   exchange fails part-way, the client runs the command itself: `add` recognises a fact it
//!   already wrote as a duplicate, so nothing is written twice.

mod server;

use super::{Cli, Command, Ctx, Env};
use git_neo::Error;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, UNIX_EPOCH};

/// How long a server waits for a command before it exits.
pub const IDLE: Duration = Duration::from_secs(600);

/// The environment variables a command reads; the client sends these, the server looks them up
/// in what was sent (never in its own environment).
pub const ENV_VARS: &[&str] = &[
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_NEO_NOW",
    "GIT_NEO_EMBEDDER",
    "GIT_NEO_CACHE_DIR",
    "XDG_CACHE_HOME",
    "GIT_NEO_DATA_DIR",
    "XDG_DATA_HOME",
    "HOME",
    "NO_COLOR",
];

/// The variables that decide which git configuration files a process reads: a server reads the
/// user's configuration with its own environment, so callers that differ here get their own
/// server (they are part of the socket's name).
const CONFIG_HOME_VARS: &[&str] =
    &["HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM"];

/// The largest request or response line accepted (a body from stdin included).
const MAX_MESSAGE: u64 = 16 << 20;

/// How long a command that started the server waits for it to listen before it runs by itself.
const START_WAIT: Duration = Duration::from_secs(5);

#[derive(clap::Subcommand)]
pub enum DaemonCommand {
    /// Serve every repository of this user in the foreground until idle (what a command starts
    /// in the background).
    Run {
        /// Seconds without a command before exiting.
        #[arg(long, default_value_t = IDLE.as_secs())]
        idle: u64,
    },
    /// Say whether the server is running, and which repositories it holds warm at what cost.
    Status,
    /// Ask the server to exit.
    Stop,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
enum Message {
    Run(RunRequest),
    Status,
    Stop,
}

/// One command for the server to run, with everything of the caller's that it depends on.
#[derive(Serialize, Deserialize)]
struct RunRequest {
    /// The client's [`version`]: a server of another build declines.
    #[serde(default)]
    version: String,
    argv: Vec<String>,
    /// The client's working directory, absolute.
    cwd: PathBuf,
    /// The work tree the client found (the server finds it again and declines on a mismatch).
    tree: PathBuf,
    env: BTreeMap<String, String>,
    stdin: Option<String>,
    colour: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
enum Response {
    Ran {
        code: i32,
        stdout: String,
        stderr: String,
    },
    /// The server cannot run this one (the client runs it itself).
    Declined {
        why: String,
    },
    Status(Box<Status>),
    Stopping,
}

/// What `git neo daemon status` reports.
#[derive(Serialize, Deserialize)]
struct Status {
    pid: u32,
    version: String,
    uptime_secs: u64,
    commands: u64,
    /// Still loading the model (commands that arrive meanwhile wait for it).
    warming: bool,
    /// `loaded`, or why there is no model (recall is lexical then).
    model: String,
    /// `neo.server.memory`: what the repositories held may cost before the least recently used
    /// is let go.
    budget_bytes: u64,
    /// What the repositories held cost, by the heap they grew.
    held_bytes: u64,
    /// The server's resident memory, the model and the binary included.
    resident_bytes: u64,
    repositories: Vec<Held>,
}

/// One repository the server holds warm.
#[derive(Clone, Serialize, Deserialize)]
struct Held {
    work_tree: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    ref_name: Option<String>,
    records: usize,
    bytes: u64,
    commands: u64,
    idle_secs: u64,
}

/// Whether `cli` is a command the server runs: the per-prompt ones, whose cost is mostly the
/// model load and the memory read. (`add --body-file -` reads a stream and runs in-process.)
pub fn eligible(cli: &Cli) -> bool {
    match &cli.command {
        Command::Recall(_) => true,
        Command::Add(a) => !a.reads_stdin(),
        Command::Hook(_) => true,
        _ => false,
    }
}

/// A command line for the server, read before clap reads it: the commands the server runs go
/// there without building the interface to parse them first (0.35 ms of a process's start, of
/// about 2.7 before the request is sent). The server parses the command line itself, runs it only
/// if it parses and is one it runs, and only in the work tree the client named, which is checked
/// against the `-C` it parses: whatever this reading gets wrong is declined, and runs in this
/// process after clap has read it, as any declined command does.
pub struct Route {
    /// `-C`, as given.
    pub dir: Option<std::path::PathBuf>,
    /// The command reads its standard input (the prompt hook).
    pub reads_stdin: bool,
}

/// [`Route`] for `args` (the program's name first), or `None` for a command the server does
/// not run, or a command line this reading leaves to clap: help, a version, `--`, a global
/// option spelled another way than `-C PATH`, `--ref REF`, `--scope SCOPE`, `--json`,
/// `--verbose` (or `--ref=REF`, `--scope=SCOPE`), a body read from standard input, or anything
/// that is not UTF-8.
pub fn route(args: &[std::ffi::OsString]) -> Option<Route> {
    let mut dir = None;
    let mut command: Option<&str> = None;
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        let arg = arg.to_str()?;
        match arg {
            "-h" | "--help" | "-V" | "--version" | "--" => return None,
            "-C" if dir.is_none() => dir = Some(std::path::PathBuf::from(rest.next()?.to_str()?)),
            "-C" => return None,
            "--ref" | "--scope" => {
                rest.next()?;
            }
            "--json" | "--verbose" => {}
            _ if arg.starts_with("--ref=") || arg.starts_with("--scope=") => {}
            _ if command.is_none() => {
                if arg.starts_with('-') {
                    return None;
                }
                command = Some(arg);
            }
            // `add --body-file -` reads a stream, and runs in this process.
            "--body-file=-" => return None,
            "--body-file" if rest.clone().next().is_some_and(|v| v == "-") => return None,
            _ => {}
        }
    }
    match command? {
        "recall" | "add" => Some(Route { dir, reads_stdin: false }),
        "hook" => Some(Route { dir, reads_stdin: true }),
        _ => None,
    }
}

/// Whether the environment allows the server (`GIT_NEO_DAEMON=off|0|false` does not).
pub fn enabled(env: Env) -> bool {
    // A repository named through git's environment (`git --git-dir=…`, GIT_DIR, GIT_WORK_TREE) is
    // opened in-process exactly as named; the server is found by the work tree a directory is in.
    if ["GIT_DIR", "GIT_WORK_TREE"].iter().any(|k| env(k).is_some_and(|v| !v.is_empty())) {
        return false;
    }
    !matches!(env("GIT_NEO_DAEMON").as_deref().map(str::trim), Some("off" | "0" | "false" | "no"))
}

/// This build: the package version and the binary's size and modification time, so that a
/// rebuilt binary is another version even when the package version did not change.
fn version() -> String {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    VERSION.get_or_init(build_version).clone()
}

/// [`version`], read from the binary once per process.
fn build_version() -> String {
    let exe = std::env::current_exe().ok();
    let meta = exe.as_ref().and_then(|e| std::fs::metadata(e).ok());
    let built = meta
        .as_ref()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("{} ({built}:{})", env!("CARGO_PKG_VERSION"), meta.map_or(0, |m| m.len()))
}

/// The work tree (or git dir, for a bare repository) `dir` is in: the nearest ancestor holding
/// `.git`, found without opening the repository so a client stays cheap.
fn work_tree(dir: &Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().ok()?;
    dir.ancestors()
        .find(|d| d.join(".git").exists() || d.join("HEAD").is_file() && d.join("objects").is_dir())
        .map(Path::to_path_buf)
}

/// The directory sockets live in, created mode 0700 and checked to be the user's own.
fn socket_dir(env: Env) -> Option<PathBuf> {
    let uid = user_id();
    let dir = match env("XDG_RUNTIME_DIR").filter(|d| d.starts_with('/')) {
        Some(run) => PathBuf::from(run).join("git-neo"),
        None => std::env::temp_dir().join(format!("git-neo-{uid}")),
    };
    if !dir.exists() {
        // Created with its mode in the one mkdir: a directory made first and narrowed after is,
        // for a moment, too open, and a second command starting then (the client polling a
        // server that is just starting) would judge it unsafe and give up.
        let made = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir);
        if made.is_err() && !dir.is_dir() {
            return None;
        }
    }
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    (meta.is_dir() && meta.uid() == uid && meta.mode() & 0o077 == 0).then_some(dir)
}

fn user_id() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// The user's socket for the settings in `env`, or `None` when there is no safe place for one.
fn socket_path(env: Env) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let mut h = blake3::Hasher::new();
    let embedder = env("GIT_NEO_EMBEDDER").unwrap_or_default();
    let cache = super::cache_root(env);
    let mut parts = vec![exe.to_string_lossy().into_owned(), version(), embedder, cache.to_string_lossy().into_owned()];
    parts.extend(CONFIG_HOME_VARS.iter().map(|k| format!("{k}={}", env(k).unwrap_or_default())));
    for part in parts {
        h.update(part.as_bytes());
        h.update(&[0]);
    }
    let name = format!("server-{}.sock", &h.finalize().to_hex()[..20]);
    Some(socket_dir(env)?.join(name))
}

fn send<T: Serialize>(stream: &mut UnixStream, msg: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    line.push(b'\n');
    stream.write_all(&line)?;
    stream.flush()
}

fn receive<T: for<'de> Deserialize<'de>>(stream: &UnixStream) -> std::io::Result<T> {
    let mut line = String::new();
    BufReader::new(stream.take(MAX_MESSAGE)).read_line(&mut line)?;
    serde_json::from_str(&line).map_err(std::io::Error::other)
}

/// Why a command did not run through the server: it runs in-process, with the stdin the client
/// already read (if any); `why` is what `--verbose` says (`None`: there was no server, which is
/// ordinary).
pub struct Fallback {
    pub stdin: Option<String>,
    pub why: Option<String>,
}

/// How long a client waits for the server's answer before running the command itself
/// (`GIT_NEO_DAEMON_TIMEOUT`, seconds, default 10). A warm server answers in milliseconds, and
/// one that just started within a second; one that does not answer in this time is stuck or busy
/// catching up a large memory, and the command is better off on its own (a write it then
/// repeats is recognised as a duplicate).
fn client_timeout(env: Env) -> Duration {
    env("GIT_NEO_DAEMON_TIMEOUT")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(Duration::from_secs(10), |s| Duration::from_secs_f64(s.min(3600.0)))
}

/// Every environment variable a request carries: [`ENV_VARS`] and the caller's command-line git
/// configuration.
fn env_to_send(env: Env) -> BTreeMap<String, String> {
    let mut sent: BTreeMap<String, String> =
        ENV_VARS.iter().filter_map(|k| env(k).map(|v| (k.to_string(), v))).collect();
    sent.extend(super::gitconfig::variables(env));
    sent
}

/// Connect to the user's server; when none listens, start one and wait (up to [`START_WAIT`])
/// until it does.
fn connect_or_start(socket: &Path, env: Env) -> Option<UnixStream> {
    if let Ok(s) = UnixStream::connect(socket) {
        return Some(s);
    }
    start_in_background(env);
    let start = Instant::now();
    let mut pause = Duration::from_millis(2);
    while start.elapsed() < START_WAIT {
        std::thread::sleep(pause);
        if let Ok(s) = UnixStream::connect(socket) {
            return Some(s);
        }
        pause = (pause * 2).min(Duration::from_millis(20));
    }
    None
}

/// In the client: run the command through the server (starting it when there is none), and
/// return its exit code after printing its output. `Err` means the caller runs it itself.
pub fn try_run(argv: &[String], dir: &Path, env: Env, reads_stdin: bool) -> Result<i32, Fallback> {
    run_through(argv, dir, env, reads_stdin, true)
}

/// [`try_run`] for a command line clap has not read ([`route`]): only through a server already
/// running. `None` when none is (or the directory is in no repository): the caller reads the
/// command line and goes on as for any other, so that a command line that does not parse never
/// starts a server.
pub fn try_run_if_up(argv: &[String], dir: &Path, env: Env, reads_stdin: bool) -> Option<Result<i32, Fallback>> {
    match run_through(argv, dir, env, reads_stdin, false) {
        Err(Fallback { stdin: None, why: None }) => None,
        other => Some(other),
    }
}

fn run_through(argv: &[String], dir: &Path, env: Env, reads_stdin: bool, start: bool) -> Result<i32, Fallback> {
    use std::io::IsTerminal;
    let no_server = |why: Option<String>| Fallback { stdin: None, why };
    // The server resolves `-C` against this, so it is sent absolute.
    let Ok(cwd) = std::env::current_dir() else { return Err(no_server(Some("no current directory".into()))) };
    let dir = cwd.join(dir);
    // Not in a repository: the command says so itself.
    let Some(tree) = work_tree(&dir) else { return Err(no_server(None)) };
    let Some(socket) = socket_path(env) else { return Err(no_server(None)) };
    let stream = if start { connect_or_start(&socket, env) } else { UnixStream::connect(&socket).ok() };
    let Some(mut stream) = stream else {
        let why = start.then(|| "the server did not start in time".to_string());
        return Err(no_server(why));
    };
    let stdin = if reads_stdin {
        // Bytes, not text: a prompt that is not UTF-8 still reaches the hook (lossily).
        let mut bytes = Vec::new();
        if std::io::stdin().take(MAX_MESSAGE / 2).read_to_end(&mut bytes).is_err() {
            return Err(no_server(Some("stdin could not be read".into())));
        }
        Some(String::from_utf8_lossy(&bytes).into_owned())
    } else {
        None
    };
    let timeout = client_timeout(env);
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let colour = std::io::stdout().is_terminal() && env("NO_COLOR").is_none_or(|v| v.is_empty());
    let request = Message::Run(RunRequest {
        version: version(),
        argv: argv.to_vec(),
        cwd,
        tree,
        env: env_to_send(env),
        stdin: stdin.clone(),
        colour,
    });
    let response = send(&mut stream, &request).and_then(|()| {
        // A server catching up a large memory it has not seen (every record embedded) takes a
        // while: a person at a terminal is told what the wait is, once, after a second.
        if !answered_within(&stream, Duration::from_secs(1)) && std::io::stderr().is_terminal() {
            let _ = writeln!(
                std::io::stderr(),
                "git-neo: the background server is reading this repository for the first time (GIT_NEO_DAEMON=off runs without it)"
            );
        }
        receive::<Response>(&stream)
    });
    let why = match response {
        Ok(Response::Ran { code, stdout, stderr }) => {
            let _ = std::io::stdout().write_all(stdout.as_bytes());
            let _ = std::io::stderr().write_all(stderr.as_bytes());
            return Ok(code);
        }
        Ok(Response::Declined { why }) => format!("the server declined: {why}"),
        Ok(_) => "the server answered something else".into(),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
            format!("the server did not answer within {:.1} s", timeout.as_secs_f64())
        }
        Err(e) => format!("the exchange with the server broke: {e}"),
    };
    Err(Fallback { stdin, why: Some(why) })
}

/// Whether the server's answer starts arriving on `stream` within `wait`.
fn answered_within(stream: &UnixStream, wait: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let mut fd = libc::pollfd { fd: stream.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd for a descriptor this function borrows, for at most `wait`.
    let ready = unsafe { libc::poll(&mut fd, 1, i32::try_from(wait.as_millis()).unwrap_or(i32::MAX)) };
    ready != 0
}

/// The server's glibc settings: the caller's, with large allocations on transparent huge pages
/// (where the kernel gives them on request; elsewhere, and outside glibc, the setting does
/// nothing). Loading the model touches about 270 MB for the first time, one page fault per
/// 4 KiB page: `git neo model status` took 0.31 s at the median with 4 KiB pages and 0.16 s with
/// huge pages (20 runs each). The kernel may compact memory to find a huge page, which made 3
/// of those 20 runs slower instead (0.41 to 0.68 s against at most 0.36): a server starts once
/// and serves every command after, so the median is what its users meet.
fn with_huge_pages(caller: Option<String>) -> String {
    const HUGE: &str = "glibc.malloc.hugetlb=1";
    match caller.filter(|t| !t.trim().is_empty()) {
        // The caller's own choice about huge pages stands.
        Some(t) if t.contains("glibc.malloc.hugetlb") => t,
        Some(t) => format!("{t}:{HUGE}"),
        None => HUGE.to_string(),
    }
}

/// Start `git neo daemon run`, detached, without waiting for it.
fn start_in_background(env: Env) {
    let Ok(exe) = std::env::current_exe() else { return };
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["daemon", "run"]);
    if let Some(idle) = env("GIT_NEO_DAEMON_IDLE").filter(|v| v.trim().parse::<u64>().is_ok()) {
        cmd.args(["--idle", idle.trim()]);
    }
    // Started from the root, holding no repository's directory; and without this caller's
    // command-line git configuration, which each request brings for its own repository.
    cmd.current_dir("/");
    // (The variables naming the configuration files stay: they are the server's, and part of its
    // socket's name.)
    for (k, _) in super::gitconfig::variables(env) {
        if !super::gitconfig::FILE_VARS.contains(&k.as_str()) {
            cmd.env_remove(k);
        }
    }
    cmd.env("GLIBC_TUNABLES", with_huge_pages(env("GLIBC_TUNABLES")));
    cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    // Its own process group: a Ctrl-C meant for the command does not reach the server.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // Nothing else of the caller's stays open in the server: a pipe a hook runner or a shell
    // handed this command (beyond stdin, stdout and stderr) would otherwise be held open until
    // the server exits, and whoever reads it would wait that long.
    // SAFETY: the closure runs in the child between fork and exec and only makes the
    // async-signal-safe close_range/close system calls.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
                for fd in 3..1024 {
                    libc::close(fd);
                }
            }
            Ok(())
        });
    }
    let _ = cmd.spawn();
}

/// Start `git neo --scope org sync` for the project at `dir`, detached and silent, without
/// waiting: a read never waits for the network, the next one finds the cache fresh.
pub fn fetch_org_in_background(dir: &Path) {
    let Ok(exe) = std::env::current_exe() else { return };
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("-C").arg(dir).args(["--scope", "org", "sync"]).env("GIT_NEO_DAEMON", "off");
    cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let _ = cmd.spawn();
}

/// `git neo daemon …`.
pub fn run(ctx: &mut Ctx, cmd: DaemonCommand) -> Result<(), Error> {
    let env: Env = &super::process_env;
    let no_place = || Error::Environment {
        variable: "XDG_RUNTIME_DIR".into(),
        message: "there is no private directory for the server's socket (it must be the user's own, mode 0700); \
                  set XDG_RUNTIME_DIR to one"
            .into(),
    };
    let socket = socket_path(env).ok_or_else(no_place)?;
    match cmd {
        DaemonCommand::Run { idle } => server::serve(&socket, Duration::from_secs(idle.max(1)), env),
        DaemonCommand::Status | DaemonCommand::Stop => {
            let stop = matches!(cmd, DaemonCommand::Stop);
            let answer = UnixStream::connect(&socket).and_then(|mut s| {
                let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                send(&mut s, if stop { &Message::Stop } else { &Message::Status })?;
                receive::<Response>(&s)
            });
            let status = match answer {
                Ok(Response::Status(status)) => Some(status),
                Ok(_) => None,
                Err(_) => {
                    if ctx.out.json {
                        ctx.out.json(&serde_json::json!({ "running": false }));
                    } else {
                        ctx.out.line("no server is running");
                    }
                    return Ok(());
                }
            };
            match (status, ctx.out.json) {
                (Some(s), true) => {
                    let mut v = serde_json::to_value(&*s).unwrap_or_default();
                    v["running"] = true.into();
                    ctx.out.json(&v);
                }
                (Some(s), false) => ctx.out.line(&describe(&s)),
                (None, true) => ctx.out.json(&serde_json::json!({ "running": true, "stopping": true })),
                (None, false) => ctx.out.line("the server is stopping"),
            }
            Ok(())
        }
    }
}

/// `daemon status` for a person.
fn describe(s: &Status) -> String {
    let mb = |b: u64| format!("{:.1} MB", b as f64 / 1_048_576.0);
    let mut out = format!(
        "server {} (git-neo {}): up {} s, {} commands served, model {}{}\nresident {}; repositories held {} of a {} budget",
        s.pid,
        s.version,
        s.uptime_secs,
        s.commands,
        s.model,
        if s.warming { " (loading)" } else { "" },
        mb(s.resident_bytes),
        mb(s.held_bytes),
        mb(s.budget_bytes),
    );
    for r in &s.repositories {
        out.push_str(&format!(
            "\n  {}{}: {} records, {}, {} commands, idle {} s",
            r.work_tree.display(),
            r.ref_name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default(),
            r.records,
            mb(r.bytes),
            r.commands,
            r.idle_secs
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;
    use std::sync::Arc;

    /// The server asks glibc for huge pages, keeping whatever else the caller set, and never
    /// overrides the caller's own choice about them.
    #[test]
    fn the_server_gets_huge_pages_and_keeps_the_callers_glibc_settings() {
        assert_eq!(with_huge_pages(None), "glibc.malloc.hugetlb=1");
        assert_eq!(with_huge_pages(Some(" ".into())), "glibc.malloc.hugetlb=1");
        assert_eq!(
            with_huge_pages(Some("glibc.malloc.arena_max=2".into())),
            "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"
        );
        assert_eq!(with_huge_pages(Some("glibc.malloc.hugetlb=0".into())), "glibc.malloc.hugetlb=0");
    }

    /// Commands starting together (a server coming up while its client polls it) all find the
    /// socket directory safe: none sees it half made.
    #[test]
    fn commands_starting_at_once_all_get_the_socket_directory() {
        for _ in 0..50 {
            let home = tempfile::tempdir().expect("a temporary home");
            let run = home.path().join("run").to_string_lossy().into_owned();
            let barrier = Arc::new(std::sync::Barrier::new(8));
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    let (run, barrier) = (run.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        let env = move |k: &str| (k == "XDG_RUNTIME_DIR").then(|| run.clone());
                        barrier.wait();
                        socket_dir(&env)
                    })
                })
                .collect();
            for t in threads {
                let dir = t.join().expect("the thread did not panic").expect("a safe socket directory");
                let mode = std::fs::metadata(&dir).expect("the directory exists").mode();
                assert_eq!(mode & 0o077, 0, "private: {mode:o}");
            }
        }
    }

    /// One socket per user and settings: not per repository, and another home or model is
    /// another server.
    #[test]
    fn the_socket_is_the_users_not_the_repositorys() {
        let home = tempfile::tempdir().expect("a temporary home");
        let run = home.path().join("run").to_string_lossy().into_owned();
        let with = |extra: &'static [(&'static str, &'static str)]| {
            let run = run.clone();
            move |k: &str| {
                if k == "XDG_RUNTIME_DIR" {
                    return Some(run.clone());
                }
                extra.iter().find(|(name, _)| *name == k).map(|(_, v)| v.to_string())
            }
        };
        let plain = socket_path(&with(&[("HOME", "/home/a")])).expect("a socket");
        assert_eq!(socket_path(&with(&[("HOME", "/home/a")])), Some(plain.clone()));
        assert_ne!(socket_path(&with(&[("HOME", "/home/b")])), Some(plain.clone()), "another home");
        assert_ne!(
            socket_path(&with(&[("HOME", "/home/a"), ("GIT_NEO_EMBEDDER", "hash")])),
            Some(plain.clone()),
            "another model"
        );
        assert!(plain.starts_with(PathBuf::from(&run).join("git-neo")));
    }

    /// The commands the server runs are routed to it before clap reads them, with `-C` as given;
    /// a command line in any form this reading does not take is left to clap.
    #[test]
    fn the_servers_commands_are_routed_before_clap_and_the_rest_left_to_it() {
        let route = |args: &[&str]| {
            let args: Vec<std::ffi::OsString> =
                std::iter::once("git-neo").chain(args.iter().copied()).map(Into::into).collect();
            route(&args).map(|r| (r.dir.map(|d| d.display().to_string()), r.reads_stdin))
        };
        assert_eq!(route(&["recall", "how do we deploy"]), Some((None, false)));
        assert_eq!(
            route(&["-C", "repo", "--json", "recall", "deploy", "--budget", "900"]),
            Some((Some("repo".into()), false))
        );
        assert_eq!(
            route(&["--ref", "refs/heads/x", "--scope=user", "add", "-t", "pattern", "-s", "S"]),
            Some((None, false))
        );
        assert_eq!(
            route(&["add", "-t", "pattern", "-s", "S", "-C", "elsewhere"]),
            Some((Some("elsewhere".into()), false))
        );
        assert_eq!(route(&["--verbose", "hook", "prompt"]), Some((None, true)), "the hook reads its prompt");
        // `--ref`'s value is not a command.
        assert_eq!(route(&["--ref", "recall", "list"]), None);
        for left in [
            &["list"][..],
            &["recall", "--help"],
            &["-h"],
            &["--version"],
            &["-Crepo", "recall", "q"],
            &["-C", "a", "recall", "q", "-C", "b"],
            &["--weird", "recall", "q"],
            &["recall", "--", "-q"],
            &["add", "-t", "pattern", "-s", "S", "--body-file", "-"],
            &["add", "-t", "pattern", "-s", "S", "--body-file=-"],
            &["-C"],
            &[],
        ] {
            assert_eq!(route(left), None, "{left:?} is clap's to read");
        }
        assert_eq!(route(&["add", "-t", "pattern", "-s", "S", "--body-file", "notes.md"]), Some((None, false)));
    }
}
