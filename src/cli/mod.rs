//! The command line: clap definitions, one file per command, and the only place that prints.
//!
//! Every command takes `--json`; human output goes to stdout, diagnostics to stderr. Colours only
//! on a terminal, and never when `NO_COLOR` is set. A closed pipe (`git neo list | head`) ends the
//! program quietly with exit 0, as ripgrep does.

mod add;
mod attempt;
mod completions;
mod construct;
mod correct;
mod curate;
pub mod daemon;
mod diff;
mod export;
mod forget;
mod gitconfig;
mod import;
mod ingest;
mod init;
mod lesson;
mod list;
mod log;
mod manpages;
mod mcp;
mod outcomes;
mod output;
mod purge;
pub mod recall;
mod report;
mod review;
mod scopes;
mod setup;
mod show;
pub mod signals;
mod stats;
mod sync;
mod verify;

use clap::{Parser, Subcommand};
use git_neo::api::{Clock, Notice, Session, SessionOptions};
use git_neo::embed::{EmbedderChoice, NoEmbedder};
use git_neo::error::Category;
use git_neo::record::Timestamp;
use git_neo::Error;
use output::Out;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

/// Exit codes, documented in docs/cli.md.
pub const EXIT_OK: i32 = 0;
pub const EXIT_USER: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_INTEGRITY: i32 = 3;
pub const EXIT_CONFLICT: i32 = 4;
pub const EXIT_ENVIRONMENT: i32 = 5;

#[derive(Parser)]
#[command(
    name = "git-neo",
    bin_name = "git neo",
    version,
    about = "A git-native memory for coding agents and the people who work beside them"
)]
pub(crate) struct Cli {
    /// Print machine-readable JSON on stdout.
    #[arg(long, global = true)]
    json: bool,
    /// Run as if started in this directory.
    #[arg(short = 'C', global = true, value_name = "PATH")]
    directory: Option<PathBuf>,
    /// The memory ref to use (default: git config neo.ref, then refs/heads/neo-memory).
    #[arg(long = "ref", global = true, value_name = "REF")]
    ref_name: Option<String>,
    /// Which memory: project (default), user, org, session:<name> (session: the current one).
    /// Writes go there; recall reads only it (without --scope, recall reads every scope).
    #[arg(long, global = true, value_name = "SCOPE", value_parser = completions::Offer(completions::SCOPES), hide_possible_values = true)]
    scope: Option<String>,
    /// Say on stderr how the command ran (through the background server, or in this process and
    /// why).
    #[arg(long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

// Each subcommand's arguments are built only when it is the one parsed (or when help, a man
// page or a completion script asks for all of them): building every argument of every command
// to parse one was 0.7 ms of each process's start, which every command through the background
// server pays on top of the server's answer (`git neo add` there: about 12 ms in all at 10k
// facts). Deferred, a command line parses in about 0.2 ms less, and a whole `git neo` process
// that goes no further starts 0.5 ms sooner (docs/recall.md, the eleventh look).
#[derive(Subcommand)]
#[command(defer = true)]
enum Command {
    /// Create the memory ref (other commands create it on first write).
    Init(init::Args),
    /// Add a typed fact; prints its id.
    Add(Box<add::Args>),
    /// Record an attempt at a task, with a check you report or git-neo runs.
    Attempt(attempt::AttemptArgs),
    /// Every attempt of a task, with whether its check still applies.
    Task(attempt::TaskArgs),
    /// Re-run an attempt's check at HEAD and record what happened.
    Recheck(attempt::RecheckArgs),
    /// Show a record's file and its derived state.
    Show(show::Args),
    /// List records (valid facts and attempts by default).
    List(list::Args),
    /// The memory ref's history as a readable changelog.
    Log(log::Args),
    /// Forget a record: append a retraction (history keeps the record).
    Forget(forget::Args),
    /// Mark a fact or attempt outdated, with a reason (the record itself is kept).
    Outdated(correct::OutdatedArgs),
    /// Say you checked a fact against the code at HEAD: clears its review flags and re-anchors it
    /// (to the ranges named, or where its anchors are now).
    Confirm(correct::ConfirmArgs),
    /// Undo a supersession, an outdated mark or a forget, by appending a record.
    Revert(correct::RevertArgs),
    /// The whole chain of a record or key: what replaced what, when and why.
    History(correct::HistoryArgs),
    /// Re-read every automatic supersession (frame rule, similarity) with today's update rule and
    /// revert the ones it would not make, as revert records in one commit.
    Repair(correct::RepairArgs),
    /// Add many facts from JSON Lines, validated first and written in batches.
    Import(import::Args),
    /// Record the repository's documents (sections, where their text is) as sources.
    Ingest(ingest::Args),
    /// Every valid fact with its state: JSON Lines that import reads back, or a markdown handbook.
    Export(export::Args),
    /// Check the memory's integrity; exit 3 listing every problem.
    Verify(verify::Args),
    /// What changed in memory between two commits, as pull-request markdown.
    Diff(diff::Args),
    /// Fetch the remote's memory, merge, and push with a lease.
    Sync(sync::SyncArgs),
    /// Push local memory additions to a proposal branch for a pull request.
    Propose(sync::ProposeArgs),
    /// Move review-mode proposals onto the memory ref.
    Approve(review::ApproveArgs),
    /// Drop review-mode proposals.
    Reject(review::RejectArgs),
    /// Remove one record file from the current memory (leaked secrets; see docs/security.md).
    Purge(purge::Args),
    /// Every scope memory lives in: location, tip, records, remote, last fetch, reachable.
    Scopes(scopes::ScopesArgs),
    /// Working sessions: scratch memory on refs/neo/sessions/<name>, promoted or dropped.
    #[command(subcommand)]
    Session(scopes::SessionCommand),
    /// Procedural lessons as reviewable patches to the agents' instruction files.
    #[command(subcommand)]
    Lesson(lesson::LessonCommand),
    /// What memory knows about a task: constraints, relevant facts, attempts, what changed.
    Recall(recall::RecallArgs),
    /// Keep a scope's memory sharp: demote facts that never help, prune stale ones, merge
    /// near-duplicates, evict to the cap; every step a record (`git neo revert` undoes it).
    Curate(curate::CurateArgs),
    /// Implicit feedback: a question asked again lowers its answer's facts, a related follow-up
    /// raises them (outcome records, from the local recall telemetry).
    Feedback(curate::FeedbackArgs),
    /// A static HTML page of what the memory is doing: size over time, confidence, supersession
    /// chains, recall latency and hit rate, the last curation.
    Report(report::Args),
    /// Recall telemetry of this clone (counts, latency, hit rate, what is and is never
    /// retrieved) and the size of every scope's memory.
    Stats,
    /// Rebuild the recall indexes from the records.
    Reindex,
    /// The embedding model for semantic recall.
    #[command(subcommand)]
    Model(recall::ModelCommand),
    /// Scan new commits for evidence about memory and record outcomes.
    Outcomes(outcomes::OutcomesArgs),
    /// How a record's confidence came to be.
    Explain(outcomes::ExplainArgs),
    /// Install or remove the post-commit and post-merge hooks that scan for outcomes.
    #[command(subcommand)]
    Hooks(outcomes::HooksCommand),
    /// Serve the memory to agents over MCP (stdio, or streamable HTTP with --http).
    Mcp(mcp::McpArgs),
    /// Configure an agent to use this memory (claude-code, cursor, codex, gemini, copilot,
    /// agents-md); merges, never overwrites.
    Setup(setup::SetupArgs),
    /// What agent hooks run (see `git neo setup`).
    #[command(subcommand)]
    Hook(setup::HookCommand),
    /// The Construct: curated patterns shipped with git-neo, and the project's own.
    #[command(subcommand)]
    Construct(construct::ConstructCommand),
    /// Write man pages for git-neo and each command (so `git neo --help` works).
    InstallManPages(manpages::Args),
    /// Print a shell completion script (bash, zsh or fish) on stdout.
    Completions(completions::Args),
    /// The ids of records starting with a prefix, one per line (what the bash completion asks).
    #[command(name = "__complete-ids", hide = true)]
    CompleteIds(completions::IdsArgs),
    /// The background server that keeps the model and memory warm for recall, add and hooks.
    #[command(subcommand)]
    Daemon(daemon::DaemonCommand),
}

/// What every command gets: output, the session over the repository, and how to open it.
pub struct Ctx {
    pub out: Out,
    dir: PathBuf,
    ref_name: Option<String>,
    /// `--scope` as given (parsed into the session's options).
    scope: Option<String>,
    /// The library session (memory, model, caches, clock), given its settings from our environment.
    pub session: Session,
    /// A non-zero exit code for a command that ran to completion but found problems (verify).
    exit: Option<i32>,
    /// Standard input already read (by the background server's client), if any.
    stdin: Option<String>,
    /// The org cache is older than its refresh interval: fetch it in the background afterwards.
    org_stale: bool,
}

/// "3 minutes ago", "2 hours ago", "5 days ago".
fn age_words(secs: i64) -> String {
    let secs = secs.max(0);
    let (n, unit) = match secs {
        s if s < 120 => (s, "second"),
        s if s < 7200 => (s / 60, "minute"),
        s if s < 172_800 => (s / 3600, "hour"),
        s => (s / 86_400, "day"),
    };
    format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" })
}

impl Ctx {
    /// At most `limit` bytes of standard input, as text with anything that is not UTF-8 replaced
    /// (what a hook reads: a prompt must never fail for its bytes).
    pub fn read_stdin_lossy(&mut self, limit: u64) -> std::io::Result<String> {
        if let Some(s) = self.stdin.take() {
            return Ok(s);
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(std::io::stdin(), limit), &mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// A dry run's plan, as text: the ref and the tip it was decided against, then each commit's
    /// message and records (`+` would be written, `=` is there already). JSON output carries the
    /// plan in the command's own object instead.
    pub fn show_plan(&mut self, plan: &git_neo::api::PlanView) {
        let at = plan.expected_tip.as_deref().map(|t| format!(" (at {})", &t[..t.len().min(12)])).unwrap_or_default();
        self.out.line(&format!("would commit to {}{at}:", plan.ref_name));
        for commit in &plan.commits {
            self.out.line(&format!("  {}", commit.message.lines().next().unwrap_or("")));
            for r in &commit.records {
                let mark = if r.present { "=" } else { "+" };
                let there = if r.present { "  (already there)" } else { "" };
                self.out.line(&format!("    {mark} {} {}  {}{there}", r.kind, &r.id[..12], r.summary));
            }
        }
        self.out.note("dry run: nothing written");
    }

    /// Say what the session queued for the person (on stderr, never in JSON).
    pub fn say_notices(&mut self) {
        for n in self.session.take_notices() {
            match n {
                Notice::SemanticOff(NoEmbedder::NotInstalled) => self
                    .out
                    .note("note: semantic recall is off (no embedding model); run scripts/install-model.sh to enable it"),
                Notice::SemanticOff(NoEmbedder::Disabled) => {}
                Notice::SemanticOff(NoEmbedder::Failed(e)) => {
                    self.out.warn(&format!("{e}; falling back to lexical recall"))
                }
                Notice::Rebuilt { reason, records, embedded } => self
                    .out
                    .note(&format!("rebuilt the recall index ({reason}): {records} records, {embedded} embedded")),
                Notice::InvalidEntries { count, first } => self.out.warn(&format!(
                    "{count} entr{} on the memory ref are not valid records and are ignored (first: {})",
                    if count == 1 { "y" } else { "ies" },
                    git_neo::display::escape(&first),
                )),
                Notice::ConstructProblems { count, first } => self.out.warn(&format!(
                    "{count} problem(s) in project patterns, which are left out (first: {first}); run `git neo construct lint`"
                )),
                Notice::ScopeUnreadable { scope, why } => {
                    self.out.warn(&format!("the {scope} memory is left out of this answer: {why}"))
                }
                Notice::OrgStale { fetched, fetch } => {
                    let age = match fetched {
                        Some(t) => format!("fetched {}", age_words(self.session.now().0 - t.0)),
                        None => "never fetched".into(),
                    };
                    self.out.note(&format!(
                        "the org memory is from the local cache ({age}){}",
                        if fetch { "; fetching it in the background" } else { "" }
                    ));
                    self.org_stale |= fetch;
                }
                Notice::TelemetryFailed(why) => {
                    self.out.warn(&format!("the recall telemetry could not be written: {why}"))
                }
            }
        }
    }
}

/// How a command looks up an environment variable: in the process environment, or (in the
/// background server) in the one its client sent.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// [`Env`] over the process environment.
pub fn process_env(key: &str) -> Option<String> {
    std::env::var(key).ok()
}

/// The cache root: `GIT_NEO_CACHE_DIR`, else `$XDG_CACHE_HOME/git-neo`, else `~/.cache/git-neo`.
pub fn cache_root(env: Env) -> PathBuf {
    let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("GIT_NEO_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|x| x.join("git-neo")))
        .or_else(|| var("HOME").map(|h| h.join(".cache").join("git-neo")))
        .unwrap_or_else(|| PathBuf::from(".git-neo-cache"))
}

/// Where the user memory and org caches live: `GIT_NEO_DATA_DIR`, else
/// `$XDG_DATA_HOME/git-neo`, else `~/.local/share/git-neo`.
pub fn data_root(env: Env) -> Option<PathBuf> {
    let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("GIT_NEO_DATA_DIR")
        .or_else(|| var("XDG_DATA_HOME").map(|x| x.join("git-neo")))
        .or_else(|| var("HOME").map(|h| h.join(".local").join("share").join("git-neo")))
}

/// The embedding model `GIT_NEO_EMBEDDER` names: `hash` (the deterministic test embedder),
/// `none`, or the installed model under the cache root.
pub fn embedder_choice(env: Env) -> EmbedderChoice {
    match env("GIT_NEO_EMBEDDER").as_deref().map(str::trim) {
        Some("hash") => EmbedderChoice::Hash,
        Some("none") => EmbedderChoice::Off,
        _ => EmbedderChoice::Model { cache_root: cache_root(env) },
    }
}

/// The session's settings from our environment, the only place the front ends read it:
/// the author from `GIT_AUTHOR_NAME`/`GIT_AUTHOR_EMAIL` (else git config, read by the library);
/// the clock from `GIT_NEO_NOW` (seconds or a UTC time, for reproducible runs) or the system;
/// the embedder from `GIT_NEO_EMBEDDER` (`hash` for the deterministic test embedder, `none`) or
/// the installed model under [`cache_root`].
pub fn session_options(
    dir: PathBuf,
    ref_name: Option<String>,
    scope: Option<&str>,
    env: Env,
) -> Result<SessionOptions, Error> {
    let data_dir = data_root(env);
    let mut config = gitconfig::overrides(env)?;
    // git hands `--git-dir` and `--work-tree` to `git neo` as GIT_DIR and GIT_WORK_TREE, relative
    // to the directory it was run in; the repository they name is the one to use, as in git.
    let beside = |v: String| {
        let p = PathBuf::from(v);
        if p.is_absolute() {
            p
        } else {
            dir.join(p)
        }
    };
    let git_dir = env("GIT_DIR").filter(|v| !v.is_empty()).map(beside);
    if let Some(work_tree) = env("GIT_WORK_TREE").filter(|v| !v.is_empty()).map(beside) {
        config.push(format!("core.worktree={}", work_tree.display()));
    }
    let env = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    let identity = match (env("GIT_AUTHOR_NAME"), env("GIT_AUTHOR_EMAIL")) {
        (Some(name), Some(email)) => Some(git_neo::api::Identity { name, email }),
        _ => None,
    };
    let clock =
        match env("GIT_NEO_NOW") {
            Some(v) => Clock::Fixed(v.parse::<i64>().ok().map(Timestamp).or_else(|| Timestamp::parse(&v)).ok_or_else(
                || Error::Environment {
                    variable: "GIT_NEO_NOW".into(),
                    message: format!(
                        "{v:?} is neither seconds since the epoch nor a UTC time like 2026-01-31T12:00:00Z"
                    ),
                },
            )?),
            None => Clock::System,
        };
    let embedder = embedder_choice(&env);
    let mut opts = SessionOptions { dir, git_dir, ref_name, identity, clock, embedder, scope: None, data_dir, config };
    if let Some(s) = scope {
        opts.scope = Some(opts.places().parse(s)?);
    }
    Ok(opts)
}

pub(crate) fn exit_code(e: &Error) -> i32 {
    match e.category() {
        Category::User => EXIT_USER,
        Category::Integrity => EXIT_INTEGRITY,
        Category::Conflict => EXIT_CONFLICT,
        Category::Environment => EXIT_ENVIRONMENT,
    }
}

/// Print a command-line error clap raised as the `--json` error object.
fn usage_json(e: &clap::Error, code: i32) {
    use clap::error::{ContextKind, ContextValue};
    let kind = format!("{:?}", e.kind());
    // `InvalidValue` -> `invalid_value`.
    let mut snake = String::new();
    for (i, c) in kind.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            snake.push('_');
        }
        snake.extend(c.to_lowercase());
    }
    let field = [ContextKind::InvalidArg, ContextKind::InvalidSubcommand].iter().find_map(|k| match e.get(*k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(v)) => v.first().cloned(),
        _ => None,
    });
    let rendered = e.render().to_string();
    let message = rendered.lines().next().unwrap_or_default().trim_start_matches("error: ").to_string();
    let v = output::error_json("usage", &snake, &message, field, code, serde_json::Value::Array(Vec::new()));
    let _ = writeln!(std::io::stdout(), "{v}");
}

/// Parse `args`, run the command, and return the exit code.
pub fn run(args: impl IntoIterator<Item = OsString>) -> i32 {
    let args: Vec<OsString> = args.into_iter().collect();
    // The per-prompt commands go through the warm background server when one answers, before
    // clap builds the interface to read them (`daemon::route`): the server reads them itself.
    let mut fallback = None;
    if let Some(route) = daemon::route(&args).filter(|_| daemon::enabled(&process_env)) {
        let argv: Option<Vec<String>> = args.iter().map(|a| a.to_str().map(str::to_string)).collect();
        // `-C` as given (or here): `try_run` resolves it against the working directory.
        let here = route.dir.unwrap_or_else(|| PathBuf::from("."));
        if let Some(argv) = argv {
            match daemon::try_run_if_up(&argv, &here, &process_env, route.reads_stdin) {
                Some(Ok(code)) => return code,
                Some(Err(f)) => fallback = Some(f),
                // No server running: clap reads the command line first, and only one that
                // parses starts the server (below).
                None => {}
            }
        }
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
            let _ = e.print();
            // Under `--json` a refused command line is one JSON object on stdout, as every other
            // failure is (the message stays on stderr for a person).
            if code != EXIT_OK && args.iter().any(|a| a == "--json") {
                usage_json(&e, code);
            }
            return code;
        }
    };
    let dir = match &cli.directory {
        Some(d) => d.clone(),
        None => match std::env::current_dir() {
            Ok(d) => d,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: cannot read the current directory: {e}");
                return EXIT_ENVIRONMENT;
            }
        },
    };
    // A command the server declined (or that found none) runs here, with what it read of stdin.
    let mut stdin = None;
    if let Some(fallback) = fallback {
        if let (true, Some(why)) = (cli.verbose, &fallback.why) {
            let _ = writeln!(std::io::stderr(), "git-neo: running in this process: {why}");
        }
        stdin = fallback.stdin;
    } else if daemon::eligible(&cli) && daemon::enabled(&process_env) {
        // A command line the route leaves to clap (`-C` spelled `-CPATH`, say) that is the server's.
        let argv: Option<Vec<String>> = args.iter().map(|a| a.to_str().map(str::to_string)).collect();
        if let Some(argv) = argv {
            let reads_stdin = matches!(cli.command, Command::Hook(_));
            match daemon::try_run(&argv, &dir, &process_env, reads_stdin) {
                Ok(code) => return code,
                Err(fallback) => {
                    if let (true, Some(why)) = (cli.verbose, &fallback.why) {
                        let _ = writeln!(std::io::stderr(), "git-neo: running in this process: {why}");
                    }
                    stdin = fallback.stdin;
                }
            }
        }
    }
    let mut out = Out::new(cli.json);
    let opts = match session_options(dir.clone(), cli.ref_name.clone(), cli.scope.as_deref(), &process_env) {
        Ok(o) => o,
        Err(e) => {
            out.error(&e);
            return exit_code(&e);
        }
    };
    let mut session = Session::new(opts);
    // The embedding bar joins the run's bars only when there is something to embed: a bar of
    // length zero would be drawn under a command's spinner.
    let bars = out.bar_set();
    let mut bar: Option<indicatif::ProgressBar> = None;
    session.set_progress(Box::new(move |_what, done, total| {
        if total == 0 {
            return;
        }
        let b = bar.get_or_insert_with(|| output::bar_in(bars.as_ref(), total as u64, "embedding"));
        b.set_length(total as u64);
        b.set_position(done as u64);
        if done >= total {
            b.finish_and_clear();
            bar = None;
        }
    }));
    let mut ctx =
        Ctx { out, dir, ref_name: cli.ref_name, scope: cli.scope, session, exit: None, stdin, org_stale: false };
    let code = execute(&mut ctx, cli.command);
    if ctx.org_stale {
        daemon::fetch_org_in_background(&ctx.dir);
    }
    if let Some(code) = signals::pending() {
        return code;
    }
    code
}

/// Run `command` with `ctx` and return the exit code (in this process, or in the background
/// server for a client).
fn execute(ctx: &mut Ctx, command: Command) -> i32 {
    let result = dispatch(ctx, command);
    // What this command wrote is the own writes of this worktree's live sessions.
    if let Err(e) = ctx.session.keep_own_writes() {
        ctx.out.warn(&format!("git-neo could not note this command's writes for the live sessions here: {e}"));
    }
    finish(ctx, result)
}

fn dispatch(ctx: &mut Ctx, command: Command) -> Result<(), Error> {
    match command {
        Command::Init(a) => init::run(ctx, a),
        Command::Add(a) => add::run(ctx, *a),
        Command::Attempt(a) => attempt::attempt(ctx, a),
        Command::Task(a) => attempt::task(ctx, a),
        Command::Recheck(a) => attempt::recheck(ctx, a),
        Command::Show(a) => show::run(ctx, a),
        Command::List(a) => list::run(ctx, a),
        Command::Log(a) => log::run(ctx, a),
        Command::Forget(a) => forget::run(ctx, a),
        Command::Outdated(a) => correct::outdated(ctx, a),
        Command::Confirm(a) => correct::confirm(ctx, a),
        Command::Revert(a) => correct::revert(ctx, a),
        Command::History(a) => correct::history(ctx, a),
        Command::Repair(a) => correct::repair(ctx, a),
        Command::Import(a) => import::run(ctx, a),
        Command::Export(a) => export::run(ctx, a),
        Command::Ingest(a) => ingest::run(ctx, a),
        Command::Verify(a) => verify::run(ctx, a),
        Command::Sync(a) => sync::sync(ctx, a),
        Command::Diff(a) => diff::run(ctx, a),
        Command::Propose(a) => sync::propose(ctx, a),
        Command::Approve(a) => review::approve(ctx, a),
        Command::Reject(a) => review::reject(ctx, a),
        Command::Purge(a) => purge::run(ctx, a),
        Command::Recall(a) => recall::recall(ctx, a),
        Command::Scopes(a) => scopes::scopes(ctx, a),
        Command::Session(c) => scopes::session(ctx, c),
        Command::Lesson(c) => lesson::lesson(ctx, c),
        Command::Stats => stats::run(ctx),
        Command::Report(a) => report::run(ctx, a),
        Command::Curate(a) => curate::curate(ctx, a),
        Command::Feedback(a) => curate::feedback(ctx, a),
        Command::Reindex => recall::reindex(ctx),
        Command::Model(c) => recall::model(ctx, c),
        Command::Construct(c) => construct::run(ctx, c),
        Command::Outcomes(a) => outcomes::outcomes(ctx, a),
        Command::Explain(a) => outcomes::explain(ctx, a),
        Command::Hooks(c) => outcomes::hooks(ctx, c),
        Command::Mcp(a) => {
            match session_options(ctx.dir.clone(), ctx.ref_name.clone(), ctx.scope.as_deref(), &process_env) {
                Ok(opts) => mcp::run(ctx, a, Session::new(opts)),
                Err(e) => Err(e),
            }
        }
        Command::Setup(a) => setup::setup(ctx, a),
        Command::Hook(c) => setup::hook(ctx, c),
        Command::InstallManPages(a) => manpages::run(ctx, a),
        Command::Completions(a) => completions::run(ctx, a),
        Command::CompleteIds(a) => completions::ids(ctx, a),
        Command::Daemon(c) => daemon::run(ctx, c),
    }
}

/// Say the notices, and the error if the command failed; the exit code.
fn finish(ctx: &mut Ctx, result: Result<(), Error>) -> i32 {
    ctx.say_notices();
    match result {
        Ok(()) => ctx.exit.unwrap_or(ctx.out.finish()),
        Err(e) => {
            ctx.out.error(&e);
            exit_code(&e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, FromArgMatches, Parser};

    /// Parsing builds the one subcommand named, and that one whole; help and the generators
    /// (which build the tree) still see every argument of every command.
    #[test]
    fn only_the_command_parsed_is_built() {
        let own = |cmd: &clap::Command, name: &str| {
            cmd.find_subcommand(name).map(|s| s.get_arguments().filter(|a| !a.is_global_set()).count())
        };
        let tree = Cli::command();
        assert_eq!(own(&tree, "add"), Some(0), "not built before anything is parsed");
        let mut parsing = Cli::command();
        let matches =
            parsing.try_get_matches_from_mut(["git-neo", "add", "-t", "decision", "-s", "Deferred"]).expect("parses");
        let cli = Cli::from_arg_matches(&matches).expect("an add");
        assert!(matches!(cli.command, Command::Add(_)));
        assert!(own(&parsing, "add").is_some_and(|n| n > 10), "the command parsed is built whole");
        assert_eq!(own(&parsing, "recall"), Some(0), "the others are not");
        let mut built = Cli::command();
        built.build();
        assert!(own(&built, "add").is_some_and(|n| n > 10), "a built tree has every command's arguments");
        let session = built.find_subcommand("session").expect("session");
        assert!(own(session, "promote").is_some_and(|n| n > 0), "and its subcommands' too");
        assert!(Cli::try_parse_from(["git-neo", "add", "--no-such-flag"]).is_err());
    }
}
