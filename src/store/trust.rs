//! The check commands this clone has run or a person here approved: `recheck` runs a recorded
//! command without asking only when it is on this list, so a command that arrived in someone
//! else's record is read by a person before it ever runs here.
//!
//! The list is a file of BLAKE3 hashes of the exact commands under the cache directory, shared by
//! every worktree of the clone. It is not memory: it never travels with a push, so a fork cannot
//! add to it.

use super::Store;
use crate::error::{Error, Result};
use std::collections::BTreeSet;

fn digest(command: &str) -> String {
    blake3::hash(command.as_bytes()).to_hex().to_string()
}

impl Store {
    /// Whether this clone ran `command` as a check, or a person here approved it.
    pub fn is_trusted_check(&self, command: &str) -> bool {
        self.trusted_checks().contains(&digest(command))
    }

    /// Put `command` on this clone's list of checks it runs without asking.
    pub fn trust_check(&self, command: &str) -> Result<()> {
        let mut all = self.trusted_checks();
        if !all.insert(digest(command)) {
            return Ok(());
        }
        let path = self.caches().trusted_checks();
        let io = |e| Error::Io { context: format!("writing {}", path.display()), source: e };
        std::fs::create_dir_all(path.parent().expect("the cache file has a parent directory")).map_err(io)?;
        let text: String = all.iter().map(|d| format!("{d}\n")).collect();
        // Written beside and renamed, so a crash never leaves half a list.
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)
    }

    fn trusted_checks(&self) -> BTreeSet<String> {
        std::fs::read_to_string(self.caches().trusted_checks())
            .map(|t| t.lines().map(|l| l.trim().to_string()).filter(|l| l.len() == 64).collect())
            .unwrap_or_default()
    }
}
