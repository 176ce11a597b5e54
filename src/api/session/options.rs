//! What a front end hands a [`crate::api::session::Session`] and gets back besides results: the options it
//! read from its flags and environment (as plain data), the clock, a recall as strings, and the
//! notices a person should be told.

use crate::embed::{EmbedderChoice, NoEmbedder};
use crate::record::Timestamp;
use crate::store::Identity;
use std::path::PathBuf;

/// Where "now" comes from. Recall needs it for validity windows and ages; writes date records
/// with it. It is separate from the author: reading memory needs no git identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// The system clock.
    System,
    /// A fixed time (tests, reproducible runs).
    Fixed(Timestamp),
}

impl Clock {
    /// The current time by this clock.
    pub fn now(&self) -> Timestamp {
        match self {
            Clock::Fixed(t) => *t,
            Clock::System => Timestamp(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs() as i64)
                    .unwrap_or(0),
            ),
        }
    }
}

/// What a front end tells a session, read by the front end from its flags and environment.
#[derive(Clone, Debug)]
pub struct SessionOptions {
    /// A directory inside the repository.
    pub dir: PathBuf,
    /// The repository's git directory when the caller named it (`GIT_DIR`, `git --git-dir`):
    /// then it is opened as given, and `dir` is not searched, as git does.
    pub git_dir: Option<PathBuf>,
    /// The memory ref (`--ref`); `None` reads `git config neo.ref`.
    pub ref_name: Option<String>,
    /// The author of writes; `None` uses git config `user.name` and `user.email`.
    pub identity: Option<Identity>,
    pub clock: Clock,
    pub embedder: EmbedderChoice,
    /// The scope commands act on (`--scope`); `None` is the project, and then recall reads every
    /// scope there is.
    pub scope: Option<crate::scope::Scope>,
    /// `<data dir>/git-neo`, home of the user memory and the org cache (`None`: none known).
    pub data_dir: Option<PathBuf>,
    /// The caller's command-line git configuration, `key=value` (see
    /// [`crate::store::StoreOptions::config`]).
    pub config: Vec<String>,
}

impl SessionOptions {
    /// Where this session's scopes are.
    pub fn places(&self) -> crate::api::share::scopes::Places {
        crate::api::share::scopes::Places {
            dir: self.dir.clone(),
            git_dir: self.git_dir.clone(),
            ref_name: self.ref_name.clone(),
            data_dir: self.data_dir.clone(),
            config: self.config.clone(),
            maintenance: crate::store::Maintenance::Inline,
        }
    }
}

/// Something the person at the front end should be told, once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// Recall runs lexical only, and why.
    SemanticOff(NoEmbedder),
    /// The recall index was rebuilt (a missing, outdated or corrupt cache is rebuilt, never an error).
    Rebuilt { reason: String, records: usize, embedded: usize },
    /// Entries on the memory ref that are not valid records (they are ignored).
    InvalidEntries { count: usize, first: String },
    /// Project Construct patterns that fail lint (they are left out).
    ConstructProblems { count: usize, first: String },
    /// A scope recall could not read (it answered from the others).
    ScopeUnreadable { scope: String, why: String },
    /// The org cache is older than `neo.org.refreshMinutes` (or was never fetched): recall used
    /// it as it is. With `fetch`, this caller should start a fetch in the background (at most
    /// one caller in [`crate::api::share::scopes::FETCH_CLAIM_SECS`] is told to).
    OrgStale { fetched: Option<Timestamp>, fetch: bool },
    /// The local retrieval telemetry could not be written (the recall itself succeeded).
    TelemetryFailed(String),
}

/// A recall as a front end receives it: strings, validated here, each problem naming its field.
#[derive(Clone, Debug)]
pub struct RecallQuery {
    pub query: String,
    /// Relevant facts to show at most.
    pub k: usize,
    /// Token budget for the whole answer.
    pub budget: usize,
    /// Fact types to keep (empty: all).
    pub types: Vec<String>,
    /// Only facts and attempts with this area label.
    pub area: Option<String>,
    /// A date, a UTC time, or a commit.
    pub as_of: Option<String>,
    /// The front end that asked, for local telemetry (`None`: not recorded, as for a warm-up).
    pub front: Option<crate::api::learn::telemetry::Front>,
    /// Read every session of the clone, not only the one current in this worktree (without a
    /// scope asked for: sessions belong to the worktree that started them, so another agent's
    /// scratch notes neither show up nor shadow the project's facts here).
    pub all_sessions: bool,
}

/// Called with `(what, done, total)` while something long runs (embedding a whole memory).
pub type Progress = Box<dyn FnMut(&str, usize, usize) + Send>;
