//! The background server: one warm [`Session`] per work tree and memory ref, so that the commands
//! a person or a hook runs on every prompt (`recall`, `add`, `hook prompt`) answer in tens of
//! milliseconds instead of paying for the model load and the memory read on each call.
//!
//! It works the way git's fsmonitor daemon does: started on demand, one per work tree, stops when
//! idle, never required for correctness.
//! - A command that can use it ([`eligible`]) connects to its socket. When nothing answers, the
//!   command runs in its own process as always, and starts a server in the background for the
//!   next one (`git neo daemon run`, detached; `GIT_NEO_DAEMON_IDLE` seconds until it exits,
//!   default ten minutes). `GIT_NEO_DAEMON=off` turns all of this off.
//! - The socket lives in a directory only the user can enter (`$XDG_RUNTIME_DIR/git-neo`, else
//!   `/tmp/git-neo-<uid>`, checked to be the user's own and mode 0700). Its name is a hash of
//!   the work tree, the memory ref, the embedder settings and the git-neo binary itself, so a
//!   rebuilt binary, another model or another ref never talks to a server that differs.
//! - The client sends its arguments, working directory, the environment variables git-neo reads,
//!   its stdin (for `hook prompt`) and whether its stdout is a terminal; the server runs the very
//!   same command code with output captured, and the client prints it and exits with its code.
//! - Writes go through the same store and ref locks as any process, so a server and other
//!   writers interleave safely; the warm memory is reloaded whenever a tip moves, and dropped
//!   when git config or the project's Construct patterns change.
//! - If the exchange fails part-way, the client runs the command itself: `add` recognises a fact
//!   it already wrote as a duplicate, so nothing is written twice.

use super::{execute, session_options, Cli, Command, Ctx, Env};
use git_neo::api::Session;
use git_neo::Error;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
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

/// The largest request or response line accepted (a body from stdin included).
const MAX_MESSAGE: u64 = 16 << 20;

#[derive(clap::Subcommand)]
pub enum DaemonCommand {
    /// Serve this work tree in the foreground until idle (what a command starts in the background).
    Run {
        /// Seconds without a command before exiting.
        #[arg(long, default_value_t = IDLE.as_secs())]
        idle: u64,
    },
    /// Say whether a server is running for this work tree.
    Status,
    /// Ask the server for this work tree to exit.
    Stop,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
enum Request {
    Run(RunRequest),
    Status,
    Stop,
}

/// One command for the server to run, with everything of the caller's that it depends on.
#[derive(Serialize, Deserialize)]
struct RunRequest {
    argv: Vec<String>,
    /// The client's working directory, absolute.
    cwd: PathBuf,
    /// The work tree the client found (and chose this server's socket by).
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
    Status {
        pid: u32,
        uptime_secs: u64,
        commands: u64,
        work_tree: PathBuf,
        /// Still loading the model and the memory (and building the vector index).
        #[serde(default)]
        warming: bool,
    },
    /// Still warming up: the client runs the command itself, and its recall does not embed what
    /// the server is already embedding.
    Warming,
    Stopping,
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

/// Whether the environment allows the server (`GIT_NEO_DAEMON=off|0|false` does not).
pub fn enabled(env: Env) -> bool {
    // A repository named through git's environment (`git --git-dir=…`, GIT_DIR, GIT_WORK_TREE) is
    // opened in-process exactly as named; the server is found by the work tree a directory is in.
    if ["GIT_DIR", "GIT_WORK_TREE"].iter().any(|k| env(k).is_some_and(|v| !v.is_empty())) {
        return false;
    }
    !matches!(env("GIT_NEO_DAEMON").as_deref().map(str::trim), Some("off" | "0" | "false" | "no"))
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
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
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

/// The socket for `dir` with the settings in `env`, or `None` when there is no safe place for one.
fn socket_for(dir: &Path, ref_name: Option<&str>, env: Env) -> Option<(PathBuf, PathBuf)> {
    let tree = work_tree(dir)?;
    let exe = std::env::current_exe().ok()?;
    let meta = std::fs::metadata(&exe).ok()?;
    let built = meta.modified().ok()?.duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mut h = blake3::Hasher::new();
    for part in [
        tree.to_string_lossy().as_ref(),
        ref_name.unwrap_or(""),
        env("GIT_NEO_EMBEDDER").as_deref().unwrap_or(""),
        super::cache_root(env).to_string_lossy().as_ref(),
        exe.to_string_lossy().as_ref(),
        &format!("{built}:{}", meta.len()),
        env!("CARGO_PKG_VERSION"),
    ] {
        h.update(part.as_bytes());
        h.update(&[0]);
    }
    // The caller's git configuration is part of what a server serves: a caller with other
    // `-c` values or GIT_CONFIG_* files gets its own server (and the server also declines a
    // request whose configuration differs from the one it started with).
    for (k, v) in super::gitconfig::variables(env) {
        h.update(k.as_bytes());
        h.update(b"=");
        h.update(v.as_bytes());
        h.update(&[0]);
    }
    let name = format!("{}.sock", &h.finalize().to_hex()[..20]);
    Some((socket_dir(env)?.join(name), tree))
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
    /// A server for this work tree is starting (this client started it, or it is still warming
    /// up): it builds the vector index, so this command's recall need not.
    pub server_starting: bool,
}

/// How long a client waits for the server's answer before running the command itself
/// (`GIT_NEO_DAEMON_TIMEOUT`, seconds, default 10). A warm server answers in tens of
/// milliseconds; one that does not answer in this time is stuck or swamped, and the command is
/// better off on its own (a write it then repeats is recognised as a duplicate).
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

/// In the client: run the command through the server when one answers, and return its exit code
/// after printing its output. `Err` means the caller runs it itself; a server is then started in
/// the background for the next command when there was none.
pub fn try_run(
    argv: &[String],
    dir: &Path,
    ref_name: Option<&str>,
    env: Env,
    reads_stdin: bool,
) -> Result<i32, Fallback> {
    use std::io::IsTerminal;
    let no_server = |why: Option<String>| Fallback { stdin: None, why, server_starting: false };
    // The server resolves `-C` against this, so it is sent absolute.
    let Ok(cwd) = std::env::current_dir() else { return Err(no_server(Some("no current directory".into()))) };
    let dir = cwd.join(dir);
    let Some((socket, tree)) = socket_for(&dir, ref_name, env) else { return Err(no_server(None)) };
    let mut stream = match UnixStream::connect(&socket) {
        Ok(s) => s,
        Err(_) => {
            start_in_background(&tree, ref_name);
            return Err(Fallback { stdin: None, why: None, server_starting: true });
        }
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
    let request = Request::Run(RunRequest {
        argv: argv.to_vec(),
        cwd,
        tree,
        env: env_to_send(env),
        stdin: stdin.clone(),
        colour,
    });
    let response = send(&mut stream, &request).and_then(|()| receive::<Response>(&stream));
    match response {
        Ok(Response::Ran { code, stdout, stderr }) => {
            let _ = std::io::stdout().write_all(stdout.as_bytes());
            let _ = std::io::stderr().write_all(stderr.as_bytes());
            Ok(code)
        }
        Ok(Response::Declined { why }) => {
            Err(Fallback { stdin, why: Some(format!("the server declined: {why}")), server_starting: false })
        }
        Ok(Response::Warming) => {
            Err(Fallback { stdin, why: Some("the server is still warming up".into()), server_starting: true })
        }
        Ok(_) => {
            Err(Fallback { stdin, why: Some("the server answered something else".into()), server_starting: false })
        }
        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => Err(Fallback {
            stdin,
            server_starting: false,
            why: Some(format!("the server did not answer within {:.1} s", timeout.as_secs_f64())),
        }),
        Err(e) => Err(Fallback {
            stdin,
            why: Some(format!("the exchange with the server broke: {e}")),
            server_starting: false,
        }),
    }
}

/// Start `git neo daemon run` for `tree`, detached, without waiting for it.
fn start_in_background(tree: &Path, ref_name: Option<&str>) {
    let Ok(exe) = std::env::current_exe() else { return };
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("-C").arg(tree);
    if let Some(r) = ref_name {
        cmd.args(["--ref", r]);
    }
    cmd.args(["daemon", "run"]);
    if let Some(idle) = std::env::var("GIT_NEO_DAEMON_IDLE").ok().filter(|v| v.parse::<u64>().is_ok()) {
        cmd.args(["--idle", &idle]);
    }
    cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    // Its own process group: a Ctrl-C meant for the command does not reach the server.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
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

/// A fingerprint of what a warm session does not notice by itself: git config (the repository's,
/// the user's) and the project's Construct patterns. When it changes, the memory and the
/// Construct library are read afresh.
fn fingerprint(tree: &Path, env: Env) -> Vec<(PathBuf, u128, u64)> {
    let mut paths = vec![tree.join(".git/config"), tree.join("config")];
    if let Some(home) = env("HOME") {
        paths.push(PathBuf::from(&home).join(".gitconfig"));
        paths.push(PathBuf::from(&home).join(".config/git/config"));
    }
    if let Ok(entries) = std::fs::read_dir(tree.join(".neo/construct")) {
        paths.extend(entries.flatten().map(|e| e.path()));
    }
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let meta = std::fs::metadata(&p).ok();
            let modified = meta
                .as_ref()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            (p, modified, meta.map_or(0, |m| m.len()))
        })
        .collect()
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
    let (socket, tree) = socket_for(&ctx.dir, ctx.ref_name.as_deref(), env).ok_or_else(no_place)?;
    match cmd {
        DaemonCommand::Run { idle } => serve(ctx, &socket, &tree, Duration::from_secs(idle.max(1))),
        DaemonCommand::Status | DaemonCommand::Stop => {
            let stop = matches!(cmd, DaemonCommand::Stop);
            let answer = UnixStream::connect(&socket).and_then(|mut s| {
                send(&mut s, if stop { &Request::Stop } else { &Request::Status })?;
                receive::<Response>(&s)
            });
            let running = match answer {
                Ok(Response::Status { pid, uptime_secs, commands, work_tree, warming }) => Some(serde_json::json!({
                    "running": true, "pid": pid, "uptime_secs": uptime_secs, "commands": commands, "work_tree": work_tree,
                    "warming": warming,
                })),
                Ok(_) => Some(serde_json::json!({ "running": true, "stopping": true })),
                Err(_) => None,
            };
            let value = running.unwrap_or_else(|| serde_json::json!({ "running": false }));
            if ctx.out.json {
                ctx.out.json(&value);
            } else if value["running"] == false {
                ctx.out.line("no server is running for this work tree");
            } else if stop {
                ctx.out.line("the server is stopping");
            } else {
                ctx.out.line(&format!(
                    "server {} for {}: up {} s, {} commands served{}",
                    value["pid"],
                    tree.display(),
                    value["uptime_secs"],
                    value["commands"],
                    if value["warming"] == true { " (warming up)" } else { "" }
                ));
            }
            Ok(())
        }
    }
}

/// How long the server waits for a client to send its request, and for it to take the answer:
/// a client that connects and stalls holds only its own connection, and not for long.
const CLIENT_IO: Duration = Duration::from_secs(5);

/// The most connections served at once; past this, a connection is closed at once and its client
/// runs the command itself.
const MAX_CONNECTIONS: usize = 256;

/// What a connection's thread hands to the one thread that owns the warm session.
enum Job {
    Run(RunJob),
    /// Exit between commands (never in the middle of a write, which holds the ref's lock).
    Stop,
}

struct RunJob {
    request: RunRequest,
    answer: std::sync::mpsc::Sender<Response>,
}

/// Serve until idle. Each connection gets its own thread, which reads the request and writes the
/// answer within [`CLIENT_IO`]; the commands themselves run one at a time on this thread, which
/// owns the warm session (commands that arrive together queue here, never behind a silent
/// client).
fn serve(ctx: &mut Ctx, socket: &Path, tree: &Path, idle: Duration) -> Result<(), Error> {
    let io = |context: &str, e: std::io::Error| Error::Io { context: context.to_string(), source: e };
    if UnixStream::connect(socket).is_ok() {
        // Another server got there first: nothing to do.
        return Ok(());
    }
    match std::fs::symlink_metadata(socket) {
        Ok(meta) if meta.file_type().is_socket() => {
            let _ = std::fs::remove_file(socket);
        }
        Ok(_) => {
            return Err(io(
                &format!("the server's socket path {} is taken by something that is not a socket", socket.display()),
                std::io::Error::other("remove it, and the next command starts a server there"),
            ))
        }
        Err(_) => {}
    }
    let listener = match UnixListener::bind(socket) {
        Ok(l) => l,
        // Lost a race to bind with another server starting: it serves.
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => return Ok(()),
        Err(e) => return Err(io(&format!("binding {}", socket.display()), e)),
    };
    let _ = std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600));
    let started = Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let busy = Arc::new(AtomicU64::new(0));
    let commands = Arc::new(AtomicU64::new(0));
    {
        let (last, busy, socket) = (last.clone(), busy.clone(), socket.to_path_buf());
        let inode = std::fs::metadata(&socket).map(|m| m.ino()).unwrap_or(0);
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(500));
            let quiet = started.elapsed().as_secs().saturating_sub(last.load(Ordering::SeqCst));
            if busy.load(Ordering::SeqCst) == 0 && quiet >= idle.as_secs() {
                // Remove the socket only if it is still ours (a newer server may have replaced it).
                if std::fs::metadata(&socket).is_ok_and(|m| m.ino() == inode) {
                    let _ = std::fs::remove_file(&socket);
                }
                std::process::exit(0);
            }
        });
    }
    let (jobs, queue) = std::sync::mpsc::channel::<Job>();
    let warming = Arc::new(AtomicBool::new(true));
    {
        let (busy, last, commands, warming) = (busy.clone(), last.clone(), commands.clone(), warming.clone());
        let tree = tree.to_path_buf();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                if busy.load(Ordering::SeqCst) as usize >= MAX_CONNECTIONS {
                    continue; // dropped: that client runs its command itself
                }
                busy.fetch_add(1, Ordering::SeqCst);
                let (jobs, busy, last, commands, tree, warming) =
                    (jobs.clone(), busy.clone(), last.clone(), commands.clone(), tree.clone(), warming.clone());
                std::thread::spawn(move || {
                    connection(stream, &jobs, &commands, started, &tree, &warming);
                    last.store(started.elapsed().as_secs(), Ordering::SeqCst);
                    busy.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
    }
    // Warm up before the first command: the one that started this server has already answered by
    // itself, and the next should not pay for the model and the memory either.
    let env: Env = &super::process_env;
    let mut seen_fingerprint = fingerprint(tree, env);
    let mut session: Option<Session> =
        session_options(tree.to_path_buf(), ctx.ref_name.clone(), None, env).ok().map(|opts| {
            let mut s = Session::new(opts);
            let warm_up = git_neo::api::RecallQuery {
                query: "warm up".into(),
                k: 1,
                budget: 100,
                types: Vec::new(),
                area: None,
                as_of: None,
                front: None,
                all_sessions: false,
            };
            let _ = s.recall(&warm_up);
            let _ = s.take_notices();
            s
        });
    warming.store(false, Ordering::SeqCst);
    for job in queue {
        let Job::Run(RunJob { request: RunRequest { argv, cwd, tree: client_tree, env, stdin, colour }, answer }) = job
        else {
            let _ = std::fs::remove_file(socket);
            return Ok(());
        };
        let response = if client_tree != tree {
            Response::Declined { why: format!("this server serves {}, not {}", tree.display(), client_tree.display()) }
        } else {
            let lookup = move |k: &str| env.get(k).cloned();
            let fp = fingerprint(tree, &lookup);
            if fp != seen_fingerprint {
                session = None;
                seen_fingerprint = fp;
            }
            run_one(&mut session, ctx, tree, argv, cwd, &lookup, stdin, colour)
        };
        if matches!(response, Response::Ran { .. }) {
            commands.fetch_add(1, Ordering::SeqCst);
        }
        let _ = answer.send(response);
    }
    Ok(())
}

/// One connection: read its request within [`CLIENT_IO`], have the command run, write the answer.
fn connection(
    mut stream: UnixStream,
    jobs: &std::sync::mpsc::Sender<Job>,
    commands: &AtomicU64,
    started: Instant,
    tree: &Path,
    warming: &AtomicBool,
) {
    let _ = stream.set_read_timeout(Some(CLIENT_IO));
    let _ = stream.set_write_timeout(Some(CLIENT_IO));
    let response = match receive::<Request>(&stream) {
        Ok(Request::Status) => Response::Status {
            pid: std::process::id(),
            uptime_secs: started.elapsed().as_secs(),
            commands: commands.load(Ordering::SeqCst),
            work_tree: tree.to_path_buf(),
            warming: warming.load(Ordering::SeqCst),
        },
        Ok(Request::Stop) => {
            let _ = send(&mut stream, &Response::Stopping);
            let _ = jobs.send(Job::Stop);
            return;
        }
        // A command never waits for the warm-up (the model load, the vectors of a fresh clone):
        // its client runs it, as fast as it would without a server.
        Ok(Request::Run(_)) if warming.load(Ordering::SeqCst) => Response::Warming,
        Ok(Request::Run(request)) => {
            let (answer, answered) = std::sync::mpsc::channel();
            let job = Job::Run(RunJob { request, answer });
            match jobs.send(job).ok().and_then(|()| answered.recv().ok()) {
                Some(r) => r,
                None => Response::Declined { why: "the server is stopping".into() },
            }
        }
        Err(e) => Response::Declined { why: format!("unreadable request: {e}") },
    };
    let _ = send(&mut stream, &response);
}

/// Run one client's command on the warm session.
#[allow(clippy::too_many_arguments)]
fn run_one(
    session: &mut Option<Session>,
    server: &Ctx,
    tree: &Path,
    argv: Vec<String>,
    cwd: PathBuf,
    env: Env,
    stdin: Option<String>,
    colour: bool,
) -> Response {
    use clap::Parser;
    let Ok(cli) = Cli::try_parse_from(&argv) else {
        return Response::Declined { why: "the arguments do not parse here".into() };
    };
    if !eligible(&cli) {
        return Response::Declined { why: "not a command the server runs".into() };
    }
    // The client sends its working directory absolute; `-C` is resolved against it, and the
    // result must lie in this server's work tree (a request for another one is declined, never
    // run here: that is how a write would land in the wrong repository).
    if !cwd.is_absolute() {
        return Response::Declined { why: format!("the working directory {} is not absolute", cwd.display()) };
    }
    let dir = match &cli.directory {
        Some(d) => cwd.join(d),
        None => cwd.clone(),
    };
    if work_tree(&dir).as_deref() != Some(tree) {
        return Response::Declined { why: format!("{} is not in {}", dir.display(), tree.display()) };
    }
    let ref_name = cli.ref_name.clone();
    let opts = match session_options(dir.clone(), ref_name.clone(), cli.scope.as_deref(), env) {
        Ok(o) => o,
        Err(e) => return Response::Declined { why: e.to_string() },
    };
    if ref_name != server.ref_name {
        return Response::Declined { why: "another memory ref".into() };
    }
    if opts.data_dir != server.session.places().data_dir {
        return Response::Declined { why: "another data directory".into() };
    }
    if opts.config != server.session.places().config {
        return Response::Declined { why: "another command-line git configuration".into() };
    }
    // Relative paths in arguments (anchors) mean what they mean in the client's directory.
    if std::env::set_current_dir(&cwd).is_err() {
        return Response::Declined { why: format!("cannot enter {}", cwd.display()) };
    }
    let mut warm = session.take().unwrap_or_else(|| Session::new(opts.clone()));
    warm.set_caller(opts.identity.clone(), opts.clock, dir.clone());
    warm.set_scope(opts.scope.clone());
    let mut ctx = Ctx {
        out: super::output::Out::capturing(cli.json, colour),
        dir,
        ref_name,
        scope: cli.scope.clone(),
        session: warm,
        exit: None,
        stdin,
        org_stale: false,
    };
    let code = execute(&mut ctx, cli.command);
    if ctx.org_stale {
        fetch_org_in_background(&ctx.dir);
    }
    let captured = ctx.out.take_captured();
    *session = Some(ctx.session);
    Response::Ran {
        code,
        stdout: String::from_utf8_lossy(&captured.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&captured.stderr.into_inner()).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// While the server warms up, a command is handed straight back to its client (never queued
    /// behind the model load); once warm, it is queued for the session as always.
    #[test]
    fn a_command_during_the_warm_up_is_handed_back_and_queued_after_it() {
        let run = || {
            Request::Run(RunRequest {
                argv: vec!["git-neo".into(), "recall".into(), "x".into()],
                cwd: PathBuf::from("/"),
                tree: PathBuf::from("/"),
                env: BTreeMap::new(),
                stdin: None,
                colour: false,
            })
        };
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let (commands, warming) = (AtomicU64::new(0), AtomicBool::new(true));
        let (mut client, server) = UnixStream::pair().expect("a socket pair");
        send(&mut client, &run()).expect("send");
        connection(server, &jobs, &commands, Instant::now(), Path::new("/"), &warming);
        assert!(matches!(receive::<Response>(&client), Ok(Response::Warming)));
        assert!(queue.try_recv().is_err(), "nothing was queued");

        warming.store(false, Ordering::SeqCst);
        let (mut client, server) = UnixStream::pair().expect("a socket pair");
        send(&mut client, &run()).expect("send");
        let handler = std::thread::spawn(move || {
            connection(server, &jobs, &commands, Instant::now(), Path::new("/"), &warming);
        });
        match queue.recv_timeout(Duration::from_secs(5)) {
            Ok(Job::Run(job)) => {
                let _ = job.answer.send(Response::Declined { why: "test".into() });
            }
            _ => panic!("a warm server queues the command"),
        }
        let _ = handler.join();
        assert!(matches!(receive::<Response>(&client), Ok(Response::Declined { .. })));
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
}
