//! Sharing memory through git remotes: fetch the remote's memory branch, merge it into the local
//! one (a union of trees in a merge commit), and push with a lease.
//!
//! Transport uses the `git` CLI (gix cannot push) with explicit refspecs. Merging needs no
//! content merge: file names are content hashes, so the union of two trees has no conflicts unless
//! a file was tampered with, which is an integrity error. The meaning of the merged records (two
//! facts superseding one, say) is the fold's job.

use super::GitContext;
use super::{Identity, Store};
use crate::error::{Error, Result};
use crate::record::Timestamp;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use gix::refs::Target;
use gix::ObjectId;
use std::collections::BTreeMap;

/// How the local ref was brought together with a fetched tip.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MergeKind {
    /// Nothing to do: the local ref already contains the fetched tip.
    UpToDate,
    /// The local ref moved to the fetched tip (or was created there).
    FastForward,
    /// A merge commit joins both histories.
    Merged,
}

/// The outcome of a push attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Push {
    Done,
    /// The remote moved since it was fetched (the lease failed, or the update was not a fast-forward).
    Rejected(String),
}

impl Store {
    /// The branch name of the memory ref, which sync requires (`neo-memory` for `refs/heads/neo-memory`).
    pub fn branch(&self) -> Result<&str> {
        self.ref_name().strip_prefix("refs/heads/").ok_or_else(|| Error::Config {
            key: super::REF_CONFIG_KEY.into(),
            message: format!("{} is not a branch; sync and propose need a ref under refs/heads/", self.ref_name()),
        })
    }

    /// The remote to use when none is named: `origin` if it exists, else the only remote.
    pub fn default_remote(&self) -> Result<String> {
        let names: Vec<String> = self.repo.remote_names().into_iter().map(|n| n.to_string()).collect();
        if names.iter().any(|n| n == "origin") {
            return Ok("origin".into());
        }
        match names.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(Error::invalid(
                "remote",
                "this repository has no remote; add one with `git remote add origin <url>`",
            )),
            many => Err(Error::invalid("remote", format!("there are several remotes ({}); name one", many.join(", ")))),
        }
    }

    /// Fetch `remote`'s copy of the memory branch into `refs/remotes/<remote>/<branch>`.
    /// `None` when the remote has no memory yet.
    pub fn fetch_memory(&self, remote: &str) -> Result<Option<ObjectId>> {
        let branch = self.branch()?.to_string();
        let tracking = format!("refs/remotes/{remote}/{branch}");
        let refspec = format!("+refs/heads/{branch}:{tracking}");
        // A user or org memory is one repository shared by every project on the machine: two
        // processes may fetch into it at once, and git then refuses the slower one's update of
        // the tracking ref. That one fetches again.
        for attempt in 1..=10u64 {
            let timeout = self.sync_timeout()?;
            match self
                .run_git_bounded(&["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, &refspec], timeout)
            {
                Ok(_) => break,
                Err(Error::GitCommand { message, .. }) if message.contains("couldn't find remote ref") => {
                    return Ok(None)
                }
                Err(Error::GitCommand { message, .. })
                    if attempt < 10
                        && (message.contains("cannot lock ref") || message.contains("unable to update local ref")) =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(30 * attempt));
                }
                Err(e) => return Err(e),
            }
        }
        let Some(mut r) = self.repo.try_find_reference(tracking.as_str()).git(|| format!("reading {tracking}"))? else {
            return Ok(None);
        };
        Ok(Some(r.peel_to_id().git(|| format!("resolving {tracking}"))?.detach()))
    }

    /// The remote-tracking copy of the memory branch for `remote`, as it is now (before a fetch).
    pub fn tracking_tip(&self, remote: &str) -> Result<Option<ObjectId>> {
        let tracking = format!("refs/remotes/{remote}/{}", self.branch()?);
        let Some(mut r) = self.repo.try_find_reference(tracking.as_str()).git(|| format!("reading {tracking}"))? else {
            return Ok(None);
        };
        Ok(Some(r.peel_to_id().git(|| format!("resolving {tracking}"))?.detach()))
    }

    /// Put the remote-tracking copy back at `old` when it holds `new` (a fetched history that sync
    /// refused is not left to be read, nor taken as the base the next sync compares with).
    pub fn restore_tracking(&self, remote: &str, old: ObjectId, new: ObjectId) -> Result<()> {
        let tracking = format!("refs/remotes/{remote}/{}", self.branch()?);
        self.run_git(&[
            "update-ref",
            "-m",
            "neo: sync refused a rewritten history",
            &tracking,
            &old.to_string(),
            &new.to_string(),
        ])
        .map(|_| ())
    }

    /// The records `old`'s tree holds that `new`'s does not.
    pub fn dropped_records(&self, old: ObjectId, new: ObjectId) -> Result<Vec<crate::record::RecordId>> {
        let (before, _) = self.entries_of_tree(self.tree_of(old)?)?;
        let (after, _) = self.entries_of_tree(self.tree_of(new)?)?;
        let kept: std::collections::HashSet<_> = after.iter().filter_map(|e| e.name_id).collect();
        Ok(before.into_iter().filter_map(|e| e.name_id).filter(|id| !kept.contains(id)).collect())
    }

    /// Whether `ancestor` is reachable from `descendant` (or equal to it).
    pub fn is_ancestor(&self, ancestor: ObjectId, descendant: ObjectId) -> Result<bool> {
        if ancestor == descendant {
            return Ok(true);
        }
        let base = self
            .repo
            .merge_base(ancestor, descendant)
            .git(|| format!("finding the merge base of {ancestor} and {descendant}"))?;
        Ok(base.map(|b| b.detach()) == Some(ancestor))
    }

    fn entries(&self, tree: ObjectId) -> Result<BTreeMap<String, (bool, ObjectId)>> {
        let tree = self.repo.find_tree(tree).git(|| format!("reading tree {tree}"))?;
        let mut map = BTreeMap::new();
        for e in tree.iter() {
            let e = e.git(|| "decoding a memory tree".into())?;
            map.insert(e.filename().to_string(), (e.mode().is_tree(), e.oid().to_owned()));
        }
        Ok(map)
    }

    fn union_into(
        &self,
        editor: &mut gix::object::tree::Editor<'_>,
        ours: ObjectId,
        theirs: ObjectId,
        prefix: &str,
    ) -> Result<()> {
        let a = self.entries(ours)?;
        for (name, (is_tree, oid)) in self.entries(theirs)? {
            let path = format!("{prefix}{name}");
            match a.get(&name) {
                None => {
                    let kind = if is_tree { gix::objs::tree::EntryKind::Tree } else { gix::objs::tree::EntryKind::Blob };
                    editor.upsert(path.as_str(), kind, oid).git(|| format!("adding {path}"))?;
                }
                Some((_, a_oid)) if *a_oid == oid => {}
                Some((true, a_oid)) if is_tree => self.union_into(editor, *a_oid, oid, &format!("{path}/"))?,
                Some(_) => {
                    return Err(Error::Integrity(format!(
                        "{path} differs between the two memories; record files never change, so one side was tampered with: run `git neo verify` on both"
                    )))
                }
            }
        }
        Ok(())
    }

    /// The union of two memory trees.
    pub fn union_trees(&self, ours: ObjectId, theirs: ObjectId) -> Result<ObjectId> {
        let tree = self.repo.find_tree(ours).git(|| format!("reading tree {ours}"))?;
        let mut editor = tree.edit().git(|| "starting a tree edit".into())?;
        self.union_into(&mut editor, ours, theirs, "")?;
        Ok(editor.write().git(|| "writing the merged tree".into())?.detach())
    }

    /// Move the memory ref back from `from` to `to`, only if it is still at `from` (a sync that
    /// did not finish takes back what it merged; a write that landed meanwhile is kept).
    pub fn restore_tip(&self, from: ObjectId, to: ObjectId, who: &Identity, now: Timestamp) -> Result<bool> {
        self.set_ref(Some(from), to, "neo: sync did not finish; back to the tip it started from", who, now)
    }

    /// How long one fetch or push may take: `neo.sync.timeout` seconds, default 120. A remote
    /// that hangs (a stuck `upload-pack`, a hook that never returns) fails the sync instead of
    /// hanging it.
    pub fn sync_timeout(&self) -> Result<std::time::Duration> {
        match self.config_value(crate::config::SYNC_TIMEOUT) {
            None => Ok(std::time::Duration::from_secs(120)),
            Some(v) => match v.trim().parse::<f64>() {
                Ok(s) if s.is_finite() && s > 0.0 => Ok(std::time::Duration::from_secs_f64(s)),
                _ => Err(Error::Config {
                    key: crate::config::SYNC_TIMEOUT.into(),
                    message: format!("{v:?} is not a number of seconds above zero"),
                }),
            },
        }
    }

    /// Bring the local memory ref together with `theirs` (fast-forward, or a merge commit),
    /// with the same compare-and-swap and retry as every write.
    pub fn merge_into_local(
        &self,
        theirs: ObjectId,
        label: &str,
        who: &Identity,
        now: Timestamp,
    ) -> Result<(MergeKind, ObjectId)> {
        for _ in 0..100 {
            let local = self.local_tip()?;
            let (kind, new) = match local {
                Some(l) if self.is_ancestor(theirs, l)? => return Ok((MergeKind::UpToDate, l)),
                Some(l) if self.is_ancestor(l, theirs)? => (MergeKind::FastForward, theirs),
                None => (MergeKind::FastForward, theirs),
                Some(l) => {
                    let tree = self.union_trees(self.tree_of(l)?, self.tree_of(theirs)?)?;
                    let sig = who.signature(now);
                    let commit = gix::objs::Commit {
                        tree,
                        parents: [l, theirs].into_iter().collect(),
                        author: sig.clone(),
                        committer: sig,
                        encoding: None,
                        message: format!("neo: merge {label}").into(),
                        extra_headers: Vec::new(),
                    };
                    (
                        MergeKind::Merged,
                        self.repo.write_object(&commit).git(|| "writing the merge commit".into())?.detach(),
                    )
                }
            };
            let message = match kind {
                MergeKind::Merged => format!("neo: merge {label}"),
                _ => format!("neo: fast-forward to {label}"),
            };
            if self.set_ref(local, new, &message, who, now)? {
                return Ok((kind, new));
            }
        }
        Err(Error::Contention { ref_name: self.ref_name().into(), attempts: 100 })
    }

    /// Move the memory ref from `expected` to `new`; `false` when another writer moved it first.
    pub(crate) fn set_ref(
        &self,
        expected: Option<ObjectId>,
        new: ObjectId,
        message: &str,
        who: &Identity,
        now: Timestamp,
    ) -> Result<bool> {
        let sig = who.signature(now);
        let mut buf = Default::default();
        let edit = RefEdit {
            change: Change::Update {
                log: LogChange { mode: RefLog::AndReference, force_create_reflog: true, message: message.into() },
                expected: match expected {
                    Some(tip) => PreviousValue::MustExistAndMatch(Target::Object(tip)),
                    None => PreviousValue::MustNotExist,
                },
                new: Target::Object(new),
            },
            name: self.ref_name.clone(),
            deref: false,
        };
        let lock = self.lock_path();
        let result = self.edit_ref(&edit, &lock, Some(sig.to_ref(&mut buf)))?;
        match result {
            Ok(_) => Ok(true),
            Err(e) if super::write::is_lost_race(&e) => Ok(false),
            Err(e) => Err(Error::Git { context: format!("updating {}", self.ref_name()), source: Box::new(e) }),
        }
    }

    /// Push `local` to `remote`'s `dest` ref, only if the remote still holds `expected`.
    pub fn push_with_lease(
        &self,
        remote: &str,
        local: ObjectId,
        dest: &str,
        expected: Option<ObjectId>,
    ) -> Result<Push> {
        let lease = format!("--force-with-lease={dest}:{}", expected.map(|e| e.to_string()).unwrap_or_default());
        let refspec = format!("{local}:{dest}");
        let timeout = self.sync_timeout()?;
        match self.run_git_bounded(&["push", "--quiet", "--porcelain", &lease, remote, &refspec], timeout) {
            Ok(_) => Ok(Push::Done),
            // The remote itself refused the update (a pre-receive or update hook, a protected
            // branch): no retry changes that. Its own words are what the person needs.
            Err(Error::GitCommand { message, .. })
                if message.contains("[remote rejected]")
                    && !message.contains("failed to update ref")
                    && !message.contains("cannot lock ref") =>
            {
                let said: Vec<&str> = message
                    .lines()
                    .filter_map(|l| l.trim().strip_prefix("remote:"))
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect();
                let reason = message
                    .lines()
                    .find(|l| l.contains("[remote rejected]"))
                    .and_then(|l| l.split("[remote rejected]").nth(1))
                    .map(str::trim)
                    .unwrap_or("");
                Err(Error::PushRefused {
                    remote: remote.to_string(),
                    reason: reason.to_string(),
                    said: if said.is_empty() { "(it gave no message)".into() } else { said.join("\n") },
                })
            }
            Err(Error::GitCommand { message, .. })
                if [
                    "stale info",
                    "rejected",
                    "fetch first",
                    "non-fast-forward",
                    "failed to update ref",
                    "cannot lock ref",
                ]
                .iter()
                .any(|m| message.contains(m)) =>
            {
                Ok(Push::Rejected(message))
            }
            Err(e) => Err(e),
        }
    }
}
