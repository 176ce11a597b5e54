//! PURE. The layout of `<common git dir>/neo/`, the one directory git-neo writes outside the
//! object database: every derived cache, lock, cursor and local list is named here and nowhere
//! else. Everything in it is rebuildable or local bookkeeping; none of it is the truth (that is
//! the memory ref). It sits in the common git directory so linked worktrees share it; the one
//! exception is which session is current ([`current_session`]), kept in each worktree's own git
//! directory.

use std::path::{Path, PathBuf};

/// The session scope that `git neo session start` made current in the worktree whose own git
/// directory is `git_dir` (`git rev-parse --git-dir`): kept per worktree, so two agents in two
/// worktrees of one clone each write to their own session. In the main worktree this is
/// `<common>/neo/session`, where every session was kept before worktrees had their own.
pub fn current_session(git_dir: &Path) -> PathBuf {
    git_dir.join("neo").join("session")
}

/// The live sessions of the worktree whose own git directory is `git_dir` (CLI working sessions
/// and prompt-hook conversations): what each had seen when it started (`recall::pin`). Per
/// worktree, like [`current_session`].
pub fn live_sessions(git_dir: &Path) -> PathBuf {
    git_dir.join("neo").join("live")
}

/// The `neo/` directory of one repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheDir {
    root: PathBuf,
}

impl CacheDir {
    /// The layout under `common_dir` (the repository's common git directory).
    pub fn in_git_dir(common_dir: &Path) -> CacheDir {
        CacheDir { root: common_dir.join("neo") }
    }

    /// `neo/` itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The recall indexes (lexical and vector), stamped with the tips they were built at.
    pub fn index(&self) -> PathBuf {
        self.root.join("index")
    }

    /// The recall indexes of session scope `name` (`refs/neo/sessions/<name>`).
    pub fn session_index(&self, name: &str) -> PathBuf {
        self.root.join("sessions").join(name).join("index")
    }

    /// The writers' OS lock, held by a git-neo process for as long as it may hold a memory ref's
    /// lock file (so a lock file nobody holds it for was abandoned by a killed writer).
    pub fn ref_write_lock(&self) -> PathBuf {
        self.root.join("ref-write.lock")
    }

    /// In a user or org memory repository: touched after every successful fetch, so reads can
    /// say how old the cached memory is.
    pub fn fetched(&self) -> PathBuf {
        self.root.join("fetched")
    }

    /// In an org memory cache: why its last fetch was refused (it failed verify); absent when
    /// the last fetch was accepted.
    pub fn refused(&self) -> PathBuf {
        self.root.join("refused")
    }

    /// In a user or org memory repository: touched by the caller that starts a background fetch.
    pub fn fetch_claim(&self) -> PathBuf {
        self.root.join("fetching")
    }

    /// The vectors of ingested documents' sections, keyed by model and section hash.
    pub fn document_vectors(&self) -> PathBuf {
        self.root.join("documents.json")
    }

    /// The Construct's pattern vectors, keyed by model and pattern text.
    pub fn construct_vectors(&self) -> PathBuf {
        self.root.join("construct-vectors.json")
    }

    /// An outcome scan's cursor and tracking state for `branch` (a file name made safe).
    pub fn outcomes_state(&self, branch: &str) -> PathBuf {
        let safe: String =
            branch.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect();
        self.root.join("outcomes").join(format!("{safe}.json"))
    }

    /// The OS lock one outcome scan of `branch` holds while it runs.
    pub fn outcomes_lock(&self, branch: &str) -> PathBuf {
        self.outcomes_state(branch).with_extension("lock")
    }

    /// Retrieval telemetry: one JSON line per recall (`api/learn/telemetry.rs`).
    pub fn telemetry(&self) -> PathBuf {
        self.root.join("telemetry").join("recalls.jsonl")
    }

    /// The telemetry file before the last rotation.
    pub fn telemetry_rotated(&self) -> PathBuf {
        self.root.join("telemetry").join("recalls.1.jsonl")
    }

    /// What the last `git neo curate` did, for the report.
    pub fn last_curation(&self) -> PathBuf {
        self.root.join("curate-last.json")
    }

    /// The ids this clone purged (sync refuses to bring them back).
    pub fn purged(&self) -> PathBuf {
        self.root.join("purged")
    }

    /// The check commands this clone ran or approved (hashes), which `recheck` runs without asking.
    pub fn trusted_checks(&self) -> PathBuf {
        self.root.join("trusted-checks")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names_become_safe_file_names() {
        let d = CacheDir::in_git_dir(Path::new("/r/.git"));
        assert_eq!(d.outcomes_state("feature/x y"), PathBuf::from("/r/.git/neo/outcomes/feature_x_y.json"));
        assert_eq!(d.outcomes_lock("main"), PathBuf::from("/r/.git/neo/outcomes/main.lock"));
        assert_eq!(d.index(), PathBuf::from("/r/.git/neo/index"));
        assert_eq!(d.session_index("s1"), PathBuf::from("/r/.git/neo/sessions/s1/index"));
    }
}
