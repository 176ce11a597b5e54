//! Refs besides the memory ref: listing a family of refs (session scopes), deleting the memory
//! ref (dropping a session), and the remote a user or org memory repository is shared through.

use super::GitContext;
use super::Store;
use crate::error::{Error, Result};
use gix::refs::transaction::{Change, PreviousValue, RefEdit, RefLog};
use gix::refs::Target;
use gix::ObjectId;

impl Store {
    /// Every ref whose full name starts with `prefix`, with its commit, sorted by name.
    pub fn refs_with_prefix(&self, prefix: &str) -> Result<Vec<(String, ObjectId)>> {
        let platform = self.repo.references().git(|| "listing references".into())?;
        let mut out = Vec::new();
        for r in platform.prefixed(prefix).git(|| format!("listing {prefix}"))? {
            let mut r = r.map_err(|e| Error::Git {
                context: format!("reading a reference under {prefix}"),
                source: Box::new(gix::Error::from_error(e)),
            })?;
            let name = r.name().as_bstr().to_string();
            let id = r.peel_to_id().git(|| format!("resolving {name}"))?.detach();
            out.push((name, id));
        }
        out.sort();
        Ok(out)
    }

    /// Delete the memory ref if it still points at `expected` (a dropped session); `false` when
    /// another writer moved it first. Its objects stay until git's own garbage collection.
    pub fn delete_ref(&self, expected: ObjectId) -> Result<bool> {
        self.delete_named_ref(self.ref_name.clone(), expected)
    }

    /// Delete the remote-tracking copy `refs/remotes/<remote>/<branch>` of the memory branch if it
    /// still points at `expected` (a fetched tip that failed verify is not read).
    pub fn forget_fetched(&self, remote: &str, expected: ObjectId) -> Result<bool> {
        let name = format!("refs/remotes/{remote}/{}", self.branch()?);
        let full = gix::refs::FullName::try_from(name.as_str())
            .map_err(|_| Error::invalid("remote", format!("{remote:?} makes no valid ref name")))?;
        self.delete_named_ref(full, expected)
    }

    fn delete_named_ref(&self, name: gix::refs::FullName, expected: ObjectId) -> Result<bool> {
        let shown = name.as_bstr().to_string();
        let edit = RefEdit {
            change: Change::Delete {
                expected: PreviousValue::MustExistAndMatch(Target::Object(expected)),
                log: RefLog::AndReference,
            },
            name,
            deref: false,
        };
        let lock = self.common_dir().join(format!("{shown}.lock"));
        let result = self.edit_ref(&edit, &lock, None)?;
        match result {
            Ok(_) => Ok(true),
            Err(e) if super::write::is_lost_race(&e) => Ok(false),
            Err(e) => Err(Error::Git { context: format!("deleting {shown}"), source: Box::new(e) }),
        }
    }

    /// The URL of remote `name`, if it is configured.
    pub fn remote_url(&self, name: &str) -> Option<String> {
        self.config_value(&format!("remote.{name}.url"))
    }

    /// Point remote `name` at `url` (in this repository's own config), when it does not already.
    pub fn set_remote_url(&self, name: &str, url: &str) -> Result<()> {
        if self.remote_url(name).as_deref() == Some(url) {
            return Ok(());
        }
        let key = format!("remote.{name}.url");
        let mut last = None;
        // Several processes may set it at once the first time; git config takes a lock, so a
        // loser looks again before it tries again.
        for attempt in 0..10u64 {
            match self.run_git(&["config", &key, url]) {
                Ok(_) => return Ok(()),
                Err(e) => {
                    if self.run_git(&["config", "--get", &key]).is_ok_and(|v| v.trim() == url) {
                        return Ok(());
                    }
                    last = Some(e);
                    std::thread::sleep(std::time::Duration::from_millis(20 * (attempt + 1)));
                }
            }
        }
        Err(last.unwrap_or_else(|| Error::invalid("remote", format!("could not set {key}"))))
    }

    /// Whether `remote` answers: `Err` with git's own words when it does not.
    pub fn probe_remote(&self, remote: &str) -> Result<()> {
        self.run_git(&["ls-remote", "--heads", remote]).map(|_| ())
    }
}
