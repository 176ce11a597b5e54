//! PURE. The layout of `<common git dir>/neo/`, the one directory git-neo writes outside the
//! object database: every derived cache, lock, cursor and local list is named here and nowhere
//! else. Everything in it is rebuildable or local bookkeeping; none of it is the truth (that is
//! the memory ref). It sits in the common git directory so linked worktrees share it.

use std::path::{Path, PathBuf};

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

    /// The ids this clone purged (sync refuses to bring them back).
    pub fn purged(&self) -> PathBuf {
        self.root.join("purged")
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
    }
}
