//! The user's background server: one process holding one loaded model, serving every repository
//! and worktree of its user, each from a warm [`Session`] of its own.
//!
//! - One server per socket: the first to take the lock beside the socket serves, any other
//!   started at the same moment leaves at once (before loading anything).
//! - An accept thread checks each peer's uid and gives each connection a thread, which reads the
//!   request and writes the answer within [`CLIENT_IO`]; the commands themselves run one at a
//!   time on the main thread, which owns the model and the warm sessions ([`Executor`]). A status
//!   request is answered by the connection's thread, from a report the executor keeps current,
//!   so it answers even while a long command runs.
//! - A request names its repository by the work tree its client found; the server finds it again
//!   from the request's directory and declines when they differ. Sessions are keyed by work tree,
//!   memory ref, data directory and command-line git configuration, so a request is only ever
//!   served from the session of its own repository and settings.
//! - The model loads once, on a thread of its own from the moment the server starts, while the
//!   first command reads its repository and opens its indexes (`embed::Pending`); what needs the
//!   model waits for what is left of the load. A repository the server has not seen is read and
//!   its recall index caught up by the command that asks, so the first answer is the one the
//!   command gives by itself.
//! - What each repository costs is the heap its commands grew (glibc's count of bytes in use,
//!   before and after each command). Beyond `neo.server.memory` the least recently used
//!   repositories are let go, and the freed heap is handed back to the system. A repository whose
//!   work tree has gone (deleted, moved) is let go at the next command.
//! - A session is dropped and read afresh when what it does not notice by itself changes: git
//!   config (the repository's, the user's) and the project's Construct patterns.

use super::{receive, send, user_id, version, work_tree, Held, Message, Response, RunRequest, Status};
use crate::cli::{embedder_choice, execute, session_options, Cli, Ctx, Env};
use git_neo::api::Session;
use git_neo::embed::{self, Embedder, EmbedderChoice};
use git_neo::Error;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, UNIX_EPOCH};

/// How long the server waits for a client to send its request, and for it to take the answer:
/// a client that connects and stalls holds only its own connection, and not for long.
const CLIENT_IO: Duration = Duration::from_secs(5);

/// The most connections served at once; past this, a connection is closed at once and its client
/// runs the command itself.
const MAX_CONNECTIONS: u64 = 256;

/// What a repository is taken to cost when the heap cannot be measured (not glibc): per record.
const BYTES_PER_RECORD_ESTIMATE: u64 = 8 << 10;

/// How long the main thread waits, after a command, for its answer to be written before it
/// counts the heap and trims it: both take the allocator's locks, which the connection writing
/// the answer needs (counted while the connection wrote, a whole-process recall came no sooner
/// than when the count came before the answer). A client that reads slower than this waits for
/// nobody.
const ANSWER_WRITTEN: Duration = Duration::from_millis(50);

/// What a connection's thread hands to the main thread.
enum Job {
    Run(RunRequest, std::sync::mpsc::Sender<Answer>),
    /// Exit between commands (never in the middle of a write, which holds the ref's lock).
    Stop,
}

/// A command's response, and how its connection says the response was written.
struct Answer {
    response: Response,
    written: std::sync::mpsc::Sender<()>,
}

/// What the executor last reported, for status requests.
#[derive(Clone, Default)]
struct Report {
    warming: bool,
    model: String,
    budget: u64,
    repositories: Vec<Held>,
}

/// Counters the threads share.
struct Shared {
    started: Instant,
    /// Seconds since `started` at the last finished connection.
    last: AtomicU64,
    /// Connections being served.
    busy: AtomicU64,
    commands: AtomicU64,
    report: Mutex<Report>,
}

/// Serve until idle (or stopped).
pub(super) fn serve(socket: &Path, idle: Duration, env: Env) -> Result<(), Error> {
    let io = |context: &str, e: std::io::Error| Error::Io { context: context.to_string(), source: e };
    // One server per socket: whoever holds the lock serves. A server started at the same moment
    // as another leaves here, having loaded nothing.
    let Some(_lock) = claim(socket).map_err(|e| io(&format!("locking {}", socket.display()), e))? else {
        return Ok(());
    };
    match std::fs::symlink_metadata(socket) {
        // A socket left by a server that is gone (the lock is ours, so none is serving it).
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
    let listener = UnixListener::bind(socket).map_err(|e| io(&format!("binding {}", socket.display()), e))?;
    let _ = std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600));
    let shared = Arc::new(Shared {
        started: Instant::now(),
        last: AtomicU64::new(0),
        busy: AtomicU64::new(0),
        commands: AtomicU64::new(0),
        report: Mutex::new(Report { warming: true, model: "loading".into(), ..Report::default() }),
    });
    let (jobs, queue) = std::sync::mpsc::channel::<Job>();
    exit_when_idle(shared.clone(), socket.to_path_buf(), idle, jobs.clone());
    {
        let shared = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                // Only this user's processes (the directory is the user's own too).
                if peer_uid(&stream) != Some(user_id()) {
                    continue;
                }
                if shared.busy.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                    continue; // dropped: that client runs its command itself
                }
                shared.busy.fetch_add(1, Ordering::SeqCst);
                let (jobs, shared) = (jobs.clone(), shared.clone());
                std::thread::spawn(move || {
                    connection(stream, &jobs, &shared);
                    shared.last.store(shared.started.elapsed().as_secs(), Ordering::SeqCst);
                    shared.busy.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
    }
    let choice = embedder_choice(env);
    let mut executor = Executor::new(choice, shared.clone());
    for job in queue {
        let Job::Run(request, answer) = job else { break };
        let response = executor.run(request);
        if matches!(response, Response::Ran { .. }) {
            shared.commands.fetch_add(1, Ordering::SeqCst);
        }
        let (written, sent) = std::sync::mpsc::channel();
        let _ = answer.send(Answer { response, written });
        executor.after_answer(|| {
            let _ = sent.recv_timeout(ANSWER_WRITTEN);
        });
    }
    // The warm sessions are let go before the process ends: what their caches hold only in
    // memory (vectors a catch-up left unwritten) is written now.
    drop(executor);
    remove_if_ours(socket);
    Ok(())
}

/// Take the lock beside `socket` (`None`: another server holds it).
fn claim(socket: &Path) -> std::io::Result<Option<std::fs::File>> {
    let mut path = socket.as_os_str().to_owned();
    path.push(".lock");
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(path)?;
    // SAFETY: flock on a descriptor we own; it has no other preconditions.
    let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    Ok(taken.then_some(file))
}

/// The uid of the process at the other end of `stream`.
fn peer_uid(stream: &UnixStream) -> Option<u32> {
    let mut cred = libc::ucred { pid: 0, uid: u32::MAX, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: SO_PEERCRED fills a ucred of the size given; both live on this stack frame.
    let ok = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    } == 0;
    ok.then_some(cred.uid)
}

/// Remove the socket on the way out. It is this server's: no other binds it while the lock is
/// held.
fn remove_if_ours(socket: &Path) {
    let _ = std::fs::remove_file(socket);
}

/// Stop once no connection is open and none came for `idle` (through the job queue, so that the
/// executor ends between commands and lets its sessions go).
fn exit_when_idle(shared: Arc<Shared>, socket: PathBuf, idle: Duration, jobs: std::sync::mpsc::Sender<Job>) {
    let inode = std::fs::metadata(&socket).map(|m| m.ino()).unwrap_or(0);
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(500));
        let quiet = shared.started.elapsed().as_secs().saturating_sub(shared.last.load(Ordering::SeqCst));
        if shared.busy.load(Ordering::SeqCst) == 0 && quiet >= idle.as_secs() {
            if std::fs::metadata(&socket).is_ok_and(|m| m.ino() == inode) {
                remove_if_ours(&socket);
            }
            if jobs.send(Job::Stop).is_err() {
                std::process::exit(0);
            }
            return;
        }
    });
}

/// One connection: read its request within [`CLIENT_IO`], have the command run, write the answer.
fn connection(mut stream: UnixStream, jobs: &std::sync::mpsc::Sender<Job>, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(CLIENT_IO));
    let _ = stream.set_write_timeout(Some(CLIENT_IO));
    let response = match receive::<Message>(&stream) {
        Ok(Message::Status) => Response::Status(Box::new(status(shared))),
        Ok(Message::Stop) => {
            let _ = send(&mut stream, &Response::Stopping);
            let _ = jobs.send(Job::Stop);
            return;
        }
        Ok(Message::Run(request)) => {
            let (answer, answered) = std::sync::mpsc::channel();
            match jobs.send(Job::Run(request, answer)).ok().and_then(|()| answered.recv().ok()) {
                Some(Answer { response, written }) => {
                    let _ = send(&mut stream, &response);
                    // Freed before the heap is counted: it is no repository's.
                    drop(response);
                    let _ = written.send(());
                    return;
                }
                None => Response::Declined { why: "the server is stopping".into() },
            }
        }
        Err(e) => Response::Declined { why: format!("unreadable request: {e}") },
    };
    let _ = send(&mut stream, &response);
}

fn status(shared: &Shared) -> Status {
    let report = shared.report.lock().map(|r| r.clone()).unwrap_or_default();
    Status {
        pid: std::process::id(),
        version: version(),
        uptime_secs: shared.started.elapsed().as_secs(),
        commands: shared.commands.load(Ordering::SeqCst),
        warming: report.warming,
        model: report.model,
        budget_bytes: report.budget,
        held_bytes: report.repositories.iter().map(|r| r.bytes).sum(),
        resident_bytes: resident_bytes(),
        repositories: report.repositories,
    }
}

/// This process's resident memory, from /proc (0 where there is none).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * u64::try_from(page).unwrap_or(4096)
}

/// Heap bytes in use (glibc), or `None` where that cannot be asked.
fn heap_in_use() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's counters.
        let info = unsafe { libc::mallinfo2() };
        Some((info.uordblks + info.hblkhd) as u64)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

/// A command that takes this long is heavy enough that the heap is trimmed after it.
const HEAVY: Duration = Duration::from_millis(50);

/// How far the heap in use may fall below its peak before the server hands the freed memory back
/// between commands.
const TRIM_FREE: u64 = 8 << 20;

/// Huge pages were asked for the model's load (the client starts the server with glibc's
/// `hugetlb` setting: see `with_huge_pages`); once it is loaded, the warm path goes back to small
/// pages. There every embedding allocates and frees its buffers (the server runs the model without
/// ONNX Runtime's arena), and on huge pages each such buffer was a fresh 2 MB page to zero:
/// through the server, alternating call by call with the build before, an add took 8% longer.
/// What is already on huge pages (the model's weights) stays there.
fn small_pages_from_now() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE only sets a flag on this process's memory map.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Give freed heap back to the system (after letting repositories go).
fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// What a warm session is kept for: a repository with its settings.
#[derive(Clone, PartialEq, Eq)]
struct Key {
    tree: PathBuf,
    ref_name: Option<String>,
    data_dir: Option<PathBuf>,
    config: Vec<String>,
}

/// One repository held warm.
struct WarmRepo {
    key: Key,
    session: Session,
    seen: Fingerprint,
    last: Instant,
    /// The heap its commands grew.
    bytes: u64,
    commands: u64,
}

/// The main thread's state: the one model and the warm sessions.
struct Executor {
    choice: EmbedderChoice,
    /// The loaded model, lent to every session (`Err`: why there is none).
    model: Result<embed::Shared, embed::NoEmbedder>,
    /// Whether the model's load (in the background, beside the first command) is over.
    loaded: embed::Settled,
    /// The last heap reading was taken after the load was over: growth from there is the
    /// commands' alone.
    load_measured: bool,
    /// Huge pages are off again, the model being loaded ([`small_pages_from_now`]).
    small_pages: bool,
    warm: Vec<WarmRepo>,
    budget: u64,
    shared: Arc<Shared>,
    /// The heap in use after the last command (asked once per command, after its answer: glibc
    /// walks its free lists to answer, which a profile showed at 8% of a warm recall when asked
    /// three times).
    heap: Option<u64>,
    /// The most the heap held since it was last trimmed.
    peak: u64,
    /// The last command took long enough to have freed a good deal (a catch-up, an embedding).
    heavy: bool,
    /// The repository whose command just ran, to account for once its answer is out.
    served: Option<Key>,
    /// The command line's parser, built once: clap builds the whole interface's subcommands
    /// before it parses (0.25 ms a request when it was built for each), and each subcommand's
    /// arguments the first time that command is parsed (`#[command(defer)]`), kept after.
    parser: clap::Command,
}

impl Executor {
    /// Start loading the model: the first command is already waiting, and reads its repository
    /// while the model loads on the other core.
    fn new(choice: EmbedderChoice, shared: Arc<Shared>) -> Executor {
        let (model, loaded) = match embed::load_long_lived(&choice) {
            Ok((m, loaded)) => (Ok(embed::Shared::new(m).metered(heap_in_use)), loaded),
            Err(why) => (Err(why), embed::Settled::already()),
        };
        let heap = heap_in_use();
        let executor = Executor {
            choice,
            model,
            load_measured: loaded.get(),
            small_pages: false,
            loaded,
            warm: Vec::new(),
            budget: git_neo::api::DEFAULT_SERVER_MEMORY,
            shared,
            heap,
            peak: heap.unwrap_or(0),
            heavy: false,
            served: None,
            parser: <Cli as clap::CommandFactory>::command(),
        };
        executor.report();
        executor
    }

    /// Publish what is held, for status requests.
    fn report(&self) {
        let now = Instant::now();
        let repositories = self
            .warm
            .iter()
            .map(|w| Held {
                work_tree: w.key.tree.clone(),
                ref_name: w.key.ref_name.clone(),
                records: w.session.records_held(),
                bytes: w.bytes,
                commands: w.commands,
                idle_secs: now.duration_since(w.last).as_secs(),
            })
            .collect();
        let model = match &self.model {
            Ok(_) if !self.loaded.get() => "loading".to_string(),
            // Over: asking is a lock, never a wait (and never contended between commands).
            Ok(m) => match m.clone().ready() {
                Ok(()) => "loaded".to_string(),
                Err(e) => embed::NoEmbedder::Failed(e.to_string()).to_string(),
            },
            Err(why) => why.to_string(),
        };
        if let Ok(mut r) = self.shared.report.lock() {
            *r = Report { warming: false, model, budget: self.budget, repositories };
        }
    }

    /// Run one client's command on its repository's warm session.
    fn run(&mut self, request: RunRequest) -> Response {
        let started = Instant::now();
        let response = self.run_inner(request);
        self.heavy = started.elapsed() >= HEAVY;
        if !self.small_pages && self.loaded.get() {
            small_pages_from_now();
            self.small_pages = true;
        }
        self.report();
        response
    }

    /// Between commands, after the answer went out, while its client exits and the next
    /// command's process starts (3 ms or more), instead of on any command's clock: the
    /// repository just served catches its indexes up to its own write, what its command grew the
    /// heap by is counted (asking glibc walks its free lists: 0.75 ms of a 14 ms recall when it
    /// was asked before the answer), the least recently used repositories that puts beyond the
    /// budget are let go, the report is published again and the heap trimmed. `written` returns
    /// once the answer is written (or waiting for it gave up): the catch-up does not wait for it,
    /// the counting does.
    fn after_answer(&mut self, written: impl FnOnce()) {
        let served = self.served.take();
        if let Some(i) = served.as_ref().and_then(|key| self.warm.iter().position(|w| w.key == *key)) {
            self.warm[i].session.settle();
        }
        written();
        if let Some(key) = served {
            if let Some(i) = self.warm.iter().position(|w| w.key == key) {
                // The heap this command (and its catch-up) grew, less what the model kept for
                // itself (its buffers grow to the largest batch it has embedded, for whichever
                // repository that was). Between commands nothing else allocates to speak of.
                let model_grew = self.model.as_ref().map_or(0, |m| m.take_growth());
                let grew = self.commands_grew();
                let w = &mut self.warm[i];
                w.bytes = match grew {
                    Some(grew) => w.bytes.saturating_add_signed(grew - model_grew),
                    None => w.session.records_held() as u64 * BYTES_PER_RECORD_ESTIMATE,
                };
            }
            self.evict(&key);
        }
        self.report();
        self.tidy();
    }

    /// [`Executor::heap_grew`] when the growth is the commands' alone: `None` (and a new reading
    /// to measure from) while it may hold the model's own load, which ran beside the first
    /// command and cannot be told apart from it in the heap's count.
    fn commands_grew(&mut self) -> Option<i64> {
        let settled = self.loaded.get();
        let grew = self.heap_grew();
        if self.load_measured {
            return grew;
        }
        self.load_measured = settled;
        None
    }

    /// Between commands, after the answer went out: hand freed heap back to the system once
    /// enough of it lies free (catching up a memory frees most of what it allocated, and glibc
    /// keeps freed memory in the process unless asked).
    fn tidy(&mut self) {
        let now = self.heap.unwrap_or(0);
        // A heavy command frees what it built on the way (batches, parsed records) while the
        // heap in use still grows with each repository held, so it is trimmed after each; a
        // light one only when the heap shrank well below its peak.
        if std::mem::take(&mut self.heavy) || self.peak.saturating_sub(now) > TRIM_FREE {
            trim_heap();
            self.peak = now;
        }
    }

    /// Read the heap in use after a command: what it grew since the last reading.
    fn heap_grew(&mut self) -> Option<i64> {
        let (before, now) = (self.heap, heap_in_use());
        self.heap = now;
        self.peak = self.peak.max(now.unwrap_or(0));
        Some(now? as i64 - before? as i64)
    }

    fn run_inner(&mut self, request: RunRequest) -> Response {
        use clap::FromArgMatches;
        let RunRequest { version: theirs, argv, cwd, tree, env, stdin, colour } = request;
        let ours = version();
        if theirs != ours {
            return Response::Declined { why: format!("this server is git-neo {ours}, the client {theirs}") };
        }
        let parsed = self.parser.try_get_matches_from_mut(&argv).and_then(|m| Cli::from_arg_matches(&m));
        let Ok(cli) = parsed else {
            return Response::Declined { why: "the arguments do not parse here".into() };
        };
        if !super::eligible(&cli) {
            return Response::Declined { why: "not a command the server runs".into() };
        }
        // The client sends its working directory absolute; `-C` is resolved against it, and the
        // work tree found from the result must be the one the client named (a request is only
        // ever run in the repository it is for: that is how a write would land in the wrong one).
        if !cwd.is_absolute() {
            return Response::Declined { why: format!("the working directory {} is not absolute", cwd.display()) };
        }
        let dir = match &cli.directory {
            Some(d) => cwd.join(d),
            None => cwd.clone(),
        };
        if work_tree(&dir).as_deref() != Some(tree.as_path()) {
            return Response::Declined { why: format!("{} is not in {}", dir.display(), tree.display()) };
        }
        let lookup = move |k: &str| env.get(k).cloned();
        let opts = match session_options(dir.clone(), cli.ref_name.clone(), cli.scope.as_deref(), &lookup) {
            Ok(o) => o,
            Err(e) => return Response::Declined { why: e.to_string() },
        };
        if opts.embedder != self.choice {
            return Response::Declined { why: "another embedding model".into() };
        }
        // Relative paths in arguments (a body file) mean what they mean in the client's directory.
        if std::env::set_current_dir(&cwd).is_err() {
            return Response::Declined { why: format!("cannot enter {}", cwd.display()) };
        }
        let key = Key {
            tree: tree.clone(),
            ref_name: cli.ref_name.clone(),
            data_dir: opts.data_dir.clone(),
            config: opts.config.clone(),
        };
        let seen = fingerprint(&tree, &lookup);
        let mut warm = match self.warm.iter().position(|w| w.key == key) {
            Some(i) if self.warm[i].seen == seen => self.warm.swap_remove(i),
            found => {
                // New, or its configuration changed: read afresh.
                if let Some(i) = found {
                    self.warm.swap_remove(i);
                }
                let session = self.session(opts.clone());
                if let Ok(budget) = session.server_memory() {
                    self.budget = budget;
                }
                WarmRepo { key: key.clone(), session, seen, last: Instant::now(), bytes: 0, commands: 0 }
            }
        };
        if let Ok(m) = &self.model {
            m.take_growth();
        }
        warm.session.set_caller(opts.identity.clone(), opts.clock, dir.clone());
        warm.session.set_scope(opts.scope.clone());
        let mut ctx = Ctx {
            out: crate::cli::output::Out::capturing(cli.json, colour),
            dir,
            ref_name: cli.ref_name.clone(),
            scope: cli.scope.clone(),
            session: warm.session,
            exit: None,
            stdin,
            org_stale: false,
        };
        // A command that panics takes only its own session down (its client runs it itself, and
        // sees the failure there), never the server and every other repository's clients.
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let code = execute(&mut ctx, cli.command);
            (code, ctx)
        }));
        let (code, mut ctx) = match ran {
            Ok(done) => done,
            Err(_) => {
                self.evict(&key);
                return Response::Declined { why: "the command failed inside the server".into() };
            }
        };
        if ctx.org_stale {
            super::fetch_org_in_background(&ctx.dir);
        }
        let captured = ctx.out.take_captured();
        warm.session = ctx.session;
        warm.last = Instant::now();
        warm.commands += 1;
        self.warm.push(warm);
        self.evict(&key);
        // What it cost is counted once the answer is out, and what that puts beyond the budget
        // is let go then.
        self.served = Some(key);
        Response::Ran {
            code,
            stdout: String::from_utf8_lossy(&captured.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&captured.stderr.into_inner()).into_owned(),
        }
    }

    /// A new session for `opts`, with the one model.
    fn session(&self, opts: git_neo::api::SessionOptions) -> Session {
        let mut session = Session::new(opts);
        // A repack inside a request would hold every client queued behind it.
        session.set_maintenance(git_neo::api::Maintenance::Detached);
        // Recall's telemetry is appended after the answer, as the repository settles.
        session.answer_first();
        if let Ok(model) = &self.model {
            session.give_embedder(Box::new(model.clone()));
        }
        session
    }

    /// Let go of repositories whose work tree has gone, then of the least recently used beyond
    /// the budget (never the one `keep`, just used).
    fn evict(&mut self, keep: &Key) {
        let before = self.warm.len();
        self.warm.retain(|w| w.key == *keep || w.key.tree.exists());
        loop {
            let total: u64 = self.warm.iter().map(|w| w.bytes).sum();
            if total <= self.budget {
                break;
            }
            let oldest = self
                .warm
                .iter()
                .enumerate()
                .filter(|(_, w)| w.key != *keep)
                .min_by_key(|(_, w)| w.last)
                .map(|(i, _)| i);
            match oldest {
                Some(i) => drop(self.warm.swap_remove(i)),
                None => break,
            }
        }
        if self.warm.len() < before {
            trim_heap();
            // What was let go is no later command's to account for.
            self.heap_grew();
            self.peak = self.heap.unwrap_or(0);
        }
    }
}

/// What a warm session does not notice by itself: git config (the repository's, the user's) and
/// the project's Construct patterns, as (path, modified, length).
type Fingerprint = Vec<(PathBuf, u128, u64)>;

fn fingerprint(tree: &Path, env: Env) -> Fingerprint {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn request(version: String) -> RunRequest {
        RunRequest {
            version,
            argv: vec!["git-neo".into(), "recall".into(), "x".into()],
            cwd: PathBuf::from("/"),
            tree: PathBuf::from("/"),
            env: BTreeMap::new(),
            stdin: None,
            colour: false,
        }
    }

    fn executor() -> Executor {
        let shared = Arc::new(Shared {
            started: Instant::now(),
            last: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            commands: AtomicU64::new(0),
            report: Mutex::new(Report::default()),
        });
        Executor::new(EmbedderChoice::Hash, shared)
    }

    /// A client of another build is declined (it runs the command itself), as is a request whose
    /// directory is not in the work tree it names.
    #[test]
    fn another_version_or_another_work_tree_is_declined() {
        let mut ex = executor();
        match ex.run(request("0.0.0 (other build)".into())) {
            Response::Declined { why } => assert!(why.contains("0.0.0 (other build)"), "{why}"),
            _ => panic!("another version was served"),
        }
        let dir = tempfile::tempdir().expect("a directory");
        let mut r = request(version());
        r.cwd = dir.path().to_path_buf();
        r.tree = dir.path().to_path_buf();
        match ex.run(r) {
            Response::Declined { why } => assert!(why.contains("is not in"), "{why}"),
            _ => panic!("a directory outside any repository was served"),
        }
        assert!(ex.warm.is_empty(), "nothing was held");
    }

    /// The one parser the server keeps serves one command line after another, whatever the
    /// last one was: arguments that do not parse are declined, and the commands after them, of
    /// other kinds and with other flags, run as they would alone.
    #[test]
    fn one_parser_serves_every_command_line() {
        let dir = tempfile::tempdir().expect("a directory");
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).expect("mkdir");
        let git = std::process::Command::new("git").arg("init").arg("-q").arg(&repo).status().expect("git");
        assert!(git.success());
        let data = dir.path().join("data");
        let env: BTreeMap<String, String> = [
            ("GIT_NEO_EMBEDDER", "hash"),
            ("GIT_AUTHOR_NAME", "Tester"),
            ("GIT_AUTHOR_EMAIL", "tester@example.com"),
            ("GIT_NEO_NOW", "2026-01-31T12:00:00Z"),
            ("GIT_NEO_DATA_DIR", &data.to_string_lossy()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let mut ex = executor();
        let mut run = |args: &[&str]| {
            let mut r = request(version());
            r.argv = std::iter::once("git-neo").chain(args.iter().copied()).map(String::from).collect();
            r.cwd = repo.clone();
            r.tree = repo.clone();
            r.env = env.clone();
            match ex.run(r) {
                Response::Ran { code, stdout, stderr } => (Some(code), stdout, stderr),
                Response::Declined { why } => (None, String::new(), why),
                _ => panic!("{args:?}: neither ran nor declined"),
            }
        };
        let (code, _, why) = run(&["recall", "--no-such-flag", "x"]);
        assert_eq!(code, None, "arguments that do not parse are declined");
        assert!(why.contains("do not parse"), "{why}");
        let (code, out, err) =
            run(&["add", "--type", "pattern", "--subject", "Retries back off exponentially", "--json"]);
        assert_eq!(code, Some(0), "{out}{err}");
        let (code, out, err) = run(&["recall", "retries", "--json", "--k", "3"]);
        assert_eq!(code, Some(0), "{err}");
        assert!(out.contains("Retries back off exponentially"), "{out}");
        // The flags of the last command line do not carry over to this one.
        let (code, out, err) = run(&["recall", "retries"]);
        assert_eq!(code, Some(0), "{err}");
        assert!(!out.trim_start().starts_with('{'), "not JSON: --json was the last call's: {out}");
        assert!(out.contains("Retries back off exponentially"), "{out}");
    }

    /// A connection's request reaches the executor's queue and its answer comes back; a status
    /// request is answered without it.
    #[test]
    fn a_connection_queues_its_command_and_answers_status_by_itself() {
        let shared = Shared {
            started: Instant::now(),
            last: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            commands: AtomicU64::new(3),
            report: Mutex::new(Report::default()),
        };
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let (mut client, server) = UnixStream::pair().expect("a socket pair");
        send(&mut client, &Message::Status).expect("send");
        connection(server, &jobs, &shared);
        match receive::<Response>(&client) {
            Ok(Response::Status(s)) => assert_eq!((s.commands, s.pid), (3, std::process::id())),
            _ => panic!("no status"),
        }
        assert!(queue.try_recv().is_err(), "a status request is not queued");

        let (mut client, server) = UnixStream::pair().expect("a socket pair");
        send(&mut client, &Message::Run(request(version()))).expect("send");
        let shared = Arc::new(shared);
        let handler = {
            let shared = shared.clone();
            std::thread::spawn(move || connection(server, &jobs, &shared))
        };
        let (written, sent) = std::sync::mpsc::channel();
        match queue.recv_timeout(Duration::from_secs(5)) {
            Ok(Job::Run(_, answer)) => {
                let _ = answer.send(Answer { response: Response::Declined { why: "test".into() }, written });
            }
            _ => panic!("the command was not queued"),
        }
        // The connection says when the answer is out (the main thread counts the heap then).
        sent.recv_timeout(Duration::from_secs(5)).expect("written");
        let _ = handler.join();
        assert!(matches!(receive::<Response>(&client), Ok(Response::Declined { .. })));
    }

    /// Two servers for one socket: the second finds the lock taken.
    #[test]
    fn only_one_server_holds_a_socket() {
        let dir = tempfile::tempdir().expect("a directory");
        let socket = dir.path().join("s.sock");
        let first = claim(&socket).expect("lock").expect("the first takes it");
        assert!(claim(&socket).expect("lock").is_none(), "the second does not");
        drop(first);
        assert!(claim(&socket).expect("lock").is_some(), "free again once the first is gone");
    }
}
