//! The library's typed errors. The binary maps each [`Category`] to an exit code; the library never
//! decides how a failure is shown.

use crate::record::Problems;
use std::path::PathBuf;

/// Everything that can go wrong in a git-neo operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request was invalid; nothing was written.
    #[error("{0}")]
    Invalid(Problems),

    /// No record id starts with the given prefix.
    #[error("{}", not_found(field, prefix))]
    NotFound { field: String, prefix: String },

    /// More than one record id starts with the given prefix.
    #[error("{}", ambiguous(field, prefix, candidates))]
    Ambiguous { field: String, prefix: String, candidates: Vec<String> },

    /// The directory is not inside a git repository.
    #[error("not a git repository (or any parent up to the root): {}: {source}", path.display())]
    NotARepository {
        path: PathBuf,
        #[source]
        source: GitError,
    },

    /// A git configuration value is unusable.
    #[error("git config {key}: {message}")]
    Config { key: String, message: String },

    /// An environment variable's value is unusable, or one that is needed is missing.
    #[error("environment variable {variable}: {message}")]
    Environment { variable: String, message: String },

    /// An import stopped part-way: the batches before it landed (each a commit), the rest did not.
    #[error("{source}\n{landed} of {total} records landed before this; run the same import again to write the rest (what landed is recognised and skipped)")]
    ImportInterrupted { landed: usize, total: usize, source: Box<Error> },

    /// The remote refused a push (a hook or a protected branch): retrying will not help.
    #[error("{remote} refused the push of the memory {reason}; it said:\n{said}\nnothing was pushed; fix what it names, then run `git neo sync` again")]
    PushRefused { remote: String, reason: String, said: String },

    /// The memory ref's lock file stayed in place for the whole bounded wait.
    #[error(
        "the memory ref {ref_name} is locked: {} exists{} and did not go away within {waited_ms} ms.\n\
         If no git or git-neo process is running, a crash left it behind: remove that file and try again.",
        lock.display(),
        age_secs.map(|s| format!(" (created {s} s ago)")).unwrap_or_default()
    )]
    Locked { ref_name: String, lock: PathBuf, age_secs: Option<u64>, waited_ms: u128 },

    /// Another process is doing the same job right now (an outcome scan of the same branch).
    #[error("{0}")]
    Busy(String),

    /// Other writers kept moving the ref for the whole retry budget.
    #[error("gave up updating {ref_name} after {attempts} attempts: other writers kept moving it; try again")]
    Contention { ref_name: String, attempts: u32 },

    /// The memory on the ref is damaged (a bad object, an unreadable tree, a record that does not parse).
    #[error("memory integrity: {0}")]
    Integrity(String),
    /// A bug in git-neo, not the caller's input nor the memory's state: a record it made itself
    /// that does not validate, a plan with nothing in it. Nothing was written.
    #[error("internal error (a bug in git-neo; nothing was written): {0}")]
    Internal(String),
    /// A work-tree file is not what an explicit edit expects (a lesson patch applied to, or
    /// restored from, a file that changed since): nothing was written; `diff` shows the person
    /// what differs.
    #[error("{file} {message}\n{diff}")]
    Changed { file: String, message: String, diff: String },
    /// An explicit edit of a work-tree file that needs the person's word (`--yes`): nothing was
    /// written; `diff` is what it would do.
    #[error("{message}\n{diff}")]
    Unconfirmed { message: String, diff: String },

    /// A git operation failed.
    #[error("git: {context}: {source}{}", full_disk(source.as_ref()))]
    Git {
        context: String,
        #[source]
        source: GitError,
    },

    /// A git subprocess (used only where gix has no equivalent, such as `gc`) failed.
    #[error("git {command}: {message}")]
    GitCommand { command: String, message: String },

    /// A derived cache (index) could not be built or read, or the embedding model failed.
    #[error(transparent)]
    Index(#[from] IndexError),

    /// A record was written to a shared scope's local copy but could not be shared (its remote
    /// did not answer, or refused): nothing is lost, a later sync shares it.
    #[error(
        "{scope} memory: record {id} is kept in the local copy but was not shared: {why}\n         `git neo sync --scope {scope}` shares it once the remote answers"
    )]
    NotShared { id: String, scope: String, why: String },

    /// A filesystem operation failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

/// Errors from the derived caches ([`crate::index`]). Most are handled by rebuilding; these are
/// what is left. Defined here, not in the index, so that this module depends on nothing above
/// it (`tests/it/boundaries.rs`).
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("index cache {path}: {message}")]
    Cache { path: String, message: String },
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

/// Errors from loading or running an embedding model ([`crate::embed`]).
#[derive(Clone, Debug, thiserror::Error)]
pub enum EmbedError {
    /// Model or runtime files are not installed.
    #[error("the embedding model is not installed (missing: {}); run scripts/install-model.sh to enable semantic recall", missing.join(", "))]
    NotInstalled { missing: Vec<String> },
    /// ONNX Runtime could not be loaded from the given library.
    #[error("cannot load ONNX Runtime from {path}: {message}")]
    Runtime { path: String, message: String },
    /// The model could not be loaded or run.
    #[error("embedding model: {0}")]
    Model(String),
}

/// What kind of failure an [`Error`] is, so callers can choose a remedy (and the CLI an exit code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    /// The caller's input or request is wrong: fix it and retry.
    User,
    /// The stored memory is damaged.
    Integrity,
    /// Another writer or a lock prevented the write: retry later.
    Conflict,
    /// The environment failed (git, filesystem).
    Environment,
}

impl Error {
    /// The category of this error.
    pub fn category(&self) -> Category {
        match self {
            Error::ImportInterrupted { source, .. } => source.category(),
            Error::Invalid(_)
            | Error::NotFound { .. }
            | Error::Ambiguous { .. }
            | Error::NotARepository { .. }
            | Error::Config { .. }
            | Error::Environment { .. }
            | Error::Unconfirmed { .. } => Category::User,
            Error::Integrity(_) | Error::Internal(_) => Category::Integrity,
            Error::Locked { .. } | Error::Contention { .. } | Error::Busy(_) | Error::Changed { .. } => {
                Category::Conflict
            }
            Error::Git { .. }
            | Error::GitCommand { .. }
            | Error::Io { .. }
            | Error::Index(_)
            | Error::NotShared { .. }
            | Error::PushRefused { .. } => Category::Environment,
        }
    }

    /// An invalid-input error with a single problem.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Invalid(Problems(vec![crate::record::Problem::new(field, message)]))
    }

    /// [`Error::invalid`] with the command-line advice that fixes it (see
    /// [`crate::record::Problem::hint`]).
    pub fn invalid_with_hint(field: impl Into<String>, message: impl Into<String>, hint: impl Into<String>) -> Error {
        Error::Invalid(Problems(vec![crate::record::Problem::new(field, message).with_hint(hint)]))
    }

    /// What went wrong without the command-line advice ("run `git neo sync`", "pass --yes"):
    /// what a front end with verbs of its own (MCP) shows, adding its own where it has them.
    pub fn plain(&self) -> String {
        match self {
            Error::Invalid(p) => p.0.iter().map(crate::record::Problem::plain).collect::<Vec<_>>().join("\n"),
            Error::NotFound { field, prefix } => not_found(field, prefix).plain(),
            Error::PushRefused { remote, reason, said } => {
                format!("{remote} refused the push of the memory {reason}; it said:\n{said}\nnothing was pushed")
            }
            Error::NotShared { id, scope, why } => {
                format!("{scope} memory: record {id} is kept in the local copy but was not shared: {why}")
            }
            Error::ImportInterrupted { landed, total, source } => {
                format!("{}\n{landed} of {total} records landed before this", source.plain())
            }
            other => other.to_string(),
        }
    }

    /// This error as the one problem it is about a field, when it is one (an id prefix that names
    /// no record or several, a single invalid value): so a request that names several ids can
    /// report every one at once.
    pub fn as_problem(&self) -> Option<crate::record::Problem> {
        match self {
            Error::NotFound { field, prefix } => Some(not_found(field, prefix)),
            Error::Ambiguous { field, prefix, candidates } => Some(ambiguous(field, prefix, candidates)),
            Error::Invalid(p) if p.0.len() == 1 => p.0.first().cloned(),
            _ => None,
        }
    }

    /// This error with the problems about `from` said to be about `to` (a front end whose
    /// argument has another name than the library's field).
    pub fn renamed_field(self, from: &str, to: &str) -> Error {
        match self {
            Error::Invalid(mut p) => {
                for problem in p.0.iter_mut().filter(|p| p.field == from) {
                    problem.field = to.to_string();
                }
                Error::Invalid(p)
            }
            other => other,
        }
    }
}

/// No record id starts with `prefix`.
fn not_found(field: &str, prefix: &str) -> crate::record::Problem {
    crate::record::Problem::new(field, format!("no record id starts with {prefix:?}"))
        .with_hint("run `git neo list --all` to see ids")
}

/// More than one record id starts with `prefix`.
fn ambiguous(field: &str, prefix: &str, candidates: &[String]) -> crate::record::Problem {
    let matches = candidates.join("\n");
    crate::record::Problem::new(
        field,
        format!("the id prefix {prefix:?} is ambiguous; it matches:\n{matches}\ngive more digits"),
    )
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The error of a git operation, kept with its chain but without naming gix here (only `store`
/// does; it converts gix's errors into this).
pub type GitError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What to add to a git error whose cause, anywhere down its chain, is a full disk: gix says only
/// what it could not write ("Could not write loose object header"), never why.
fn full_disk(e: &(dyn std::error::Error + 'static)) -> &'static str {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::StorageFull || io.raw_os_error() == Some(28) {
                return " (no space left on device: free some space and run the command again; the memory ref was not moved)";
            }
        }
        cause = c.source();
    }
    ""
}

#[cfg(test)]
mod full_disk_tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("Could not write loose object header")]
    struct Loose(#[source] std::io::Error);

    #[test]
    fn a_full_disk_under_a_git_error_is_named() {
        let full = Error::Git {
            context: "writing a record".into(),
            source: Box::new(Loose(std::io::Error::from_raw_os_error(28))),
        };
        assert!(full.to_string().contains("no space left on device"), "{full}");
        let other = Error::Git {
            context: "writing a record".into(),
            source: Box::new(Loose(std::io::Error::from_raw_os_error(13))),
        };
        assert!(!other.to_string().contains("no space"), "{other}");
    }
}
