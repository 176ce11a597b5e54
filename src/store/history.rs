//! The ref's history: commits in order, and which record files each one added or removed.
//!
//! The tree comparison descends only into subtrees whose ids differ, so a commit that adds one
//! record costs a handful of small tree reads whatever the size of the memory.

use super::GitContext;
use super::Store;
use crate::error::Result;
use crate::record::{Kind, RecordId, Timestamp};
use gix::ObjectId;
use std::collections::BTreeMap;

/// A change to one path between two memory trees.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TreeChange {
    pub path: String,
    /// `added`, `removed` or `modified`.
    pub change: &'static str,
}

/// A record a commit added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AddedRecord {
    pub kind: Kind,
    pub id: RecordId,
}

/// One commit on the memory ref.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CommitInfo {
    pub commit: String,
    pub parents: Vec<String>,
    pub author: String,
    pub time: Timestamp,
    pub message: String,
    /// Records this commit added, relative to its first parent.
    pub added: Vec<AddedRecord>,
    /// Record files this commit removed or changed relative to its first parent (never done by git-neo).
    pub other_changes: Vec<TreeChange>,
}

impl Store {
    /// Every file that differs between trees `old` and `new` (`None` is the empty tree), with its
    /// blob on each side (`None`: absent on that side). Submodules and symlinks are skipped.
    pub fn diff_files(&self, old: Option<ObjectId>, new: Option<ObjectId>) -> Result<Vec<FileDiff>> {
        let mut out = Vec::new();
        self.diff_files_into(old, new, "", &mut out)?;
        Ok(out)
    }

    fn diff_files_into(
        &self,
        old: Option<ObjectId>,
        new: Option<ObjectId>,
        prefix: &str,
        out: &mut Vec<FileDiff>,
    ) -> Result<()> {
        if old == new {
            return Ok(());
        }
        let a = self.file_map(old)?;
        let b = self.file_map(new)?;
        let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        for name in names {
            let (x, y) = (a.get(name), b.get(name));
            if x == y {
                continue;
            }
            let path = format!("{prefix}{name}");
            let tree = |v: Option<&(NodeKind, ObjectId)>| v.filter(|(k, _)| *k == NodeKind::Tree).map(|(_, id)| *id);
            let blob = |v: Option<&(NodeKind, ObjectId)>| v.filter(|(k, _)| *k == NodeKind::Blob).map(|(_, id)| *id);
            if tree(x).is_some() || tree(y).is_some() {
                self.diff_files_into(tree(x), tree(y), &format!("{path}/"), out)?;
            }
            if blob(x).is_some() || blob(y).is_some() {
                out.push(FileDiff { path, old_blob: blob(x), new_blob: blob(y) });
            }
        }
        Ok(())
    }

    fn file_map(&self, tree: Option<ObjectId>) -> Result<BTreeMap<String, (NodeKind, ObjectId)>> {
        let mut map = BTreeMap::new();
        if let Some(t) = tree {
            let tree = self.repo.find_tree(t).git(|| format!("reading tree {t}"))?;
            for e in tree.iter() {
                let e = e.git(|| format!("decoding tree {t}"))?;
                let mode = e.mode();
                let kind = if mode.is_tree() {
                    NodeKind::Tree
                } else if mode.is_blob() {
                    NodeKind::Blob
                } else {
                    NodeKind::Other
                };
                map.insert(e.filename().to_string(), (kind, e.oid().to_owned()));
            }
        }
        Ok(map)
    }

    /// The first-parent chain from `tip` back to (not including) `stop`, oldest first, with
    /// commit times: the commits of a branch as its own history tells them.
    pub fn first_parent_chain(&self, tip: ObjectId, stop: Option<ObjectId>, limit: usize) -> Result<Vec<CodeCommit>> {
        let mut out = Vec::new();
        let mut at = Some(tip);
        while let Some(id) = at {
            if Some(id) == stop || out.len() >= limit {
                break;
            }
            let commit = self.repo.find_commit(id).git(|| format!("reading commit {id}"))?;
            let decoded = commit.decode().git(|| format!("decoding commit {id}"))?;
            let parents: Vec<ObjectId> = decoded.parents().collect();
            let time = decoded.committer().ok().and_then(|c| c.time().ok()).map(|t| Timestamp(t.seconds));
            out.push(CodeCommit {
                id,
                parents: parents.clone(),
                tree: decoded.tree(),
                message: decoded.message.to_string(),
                time: time.unwrap_or(Timestamp(0)),
            });
            at = parents.first().copied();
        }
        out.reverse();
        Ok(out)
    }

    /// Every path that differs between trees `old` and `new` (`None` is the empty tree).
    pub fn diff_trees(&self, old: Option<ObjectId>, new: Option<ObjectId>) -> Result<Vec<TreeChange>> {
        Ok(self
            .diff_files(old, new)?
            .into_iter()
            .map(|f| TreeChange {
                change: match (f.old_blob, f.new_blob) {
                    (None, _) => "added",
                    (_, None) => "removed",
                    _ => "modified",
                },
                path: f.path,
            })
            .collect())
    }

    /// The tree of a commit.
    pub fn tree_of(&self, commit: ObjectId) -> Result<ObjectId> {
        Ok(self
            .repo
            .find_commit(commit)
            .git(|| format!("reading commit {commit}"))?
            .tree_id()
            .git(|| format!("reading the tree of {commit}"))?
            .detach())
    }

    /// Up to `limit` commits reachable from `tip`, newest first, each with the records it added.
    /// The first line of a commit's message, or `None` when this repository lacks the commit
    /// (outcomes fetched from a clone that has code commits this one has not).
    pub fn commit_subject(&self, id: ObjectId) -> Result<Option<String>> {
        let Ok(commit) = self.repo.find_commit(id) else { return Ok(None) };
        let decoded = commit.decode().git(|| format!("decoding commit {id}"))?;
        Ok(Some(decoded.message.to_string().lines().next().unwrap_or("").trim().to_string()))
    }

    /// A commit's committer time.
    pub fn commit_time(&self, id: ObjectId) -> Result<Timestamp> {
        let commit = self.repo.find_commit(id).git(|| format!("reading commit {id}"))?;
        let time = commit.time().git(|| format!("reading the time of commit {id}"))?;
        Ok(Timestamp(time.seconds))
    }

    pub fn history(&self, tip: ObjectId, limit: usize) -> Result<Vec<CommitInfo>> {
        let walk = self
            .repo
            .rev_walk([tip])
            .sorting(gix::revision::walk::Sorting::ByCommitTime(Default::default()))
            .all()
            .git(|| format!("walking the history of {}", self.ref_name()))?;
        let mut out = Vec::new();
        for info in walk.take(limit) {
            let info = info.git(|| "walking memory history".into())?;
            let commit = self.repo.find_commit(info.id).git(|| format!("reading commit {}", info.id))?;
            let decoded = commit.decode().git(|| format!("decoding commit {}", info.id))?;
            let parents: Vec<ObjectId> = decoded.parents().collect();
            let author = decoded.author().map(|a| format!("{} <{}>", a.name, a.email)).unwrap_or_default();
            let time = decoded
                .committer()
                .ok()
                .and_then(|c| c.time().ok())
                .map(|t| Timestamp(t.seconds))
                .unwrap_or(Timestamp(0));
            let message = decoded.message.to_string();
            let tree = decoded.tree();
            drop(decoded);
            let parent_tree = match parents.first() {
                Some(p) => Some(self.tree_of(*p)?),
                None => None,
            };
            let mut added = Vec::new();
            let mut other_changes = Vec::new();
            for change in self.diff_trees(parent_tree, Some(tree))? {
                let parsed = (change.change == "added")
                    .then(|| {
                        let (dir, rest) = change.path.split_once('/')?;
                        let file = rest.rsplit('/').next()?;
                        Some(AddedRecord {
                            kind: Kind::from_dir(dir)?,
                            id: RecordId::from_hex(file.strip_suffix(".md")?)?,
                        })
                    })
                    .flatten();
                match parsed {
                    Some(rec) => added.push(rec),
                    None if change.path == "FORMAT" && change.change == "added" => {}
                    None => other_changes.push(change),
                }
            }
            out.push(CommitInfo {
                commit: info.id.to_string(),
                parents: parents.iter().map(|p| p.to_string()).collect(),
                author,
                time,
                message,
                added,
                other_changes,
            });
        }
        Ok(out)
    }
}

/// A file that differs between two trees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileDiff {
    pub path: String,
    pub old_blob: Option<ObjectId>,
    pub new_blob: Option<ObjectId>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NodeKind {
    Tree,
    Blob,
    Other,
}

/// A commit of the code's history, as outcome detection reads it.
#[derive(Clone, Debug)]
pub struct CodeCommit {
    pub id: ObjectId,
    pub parents: Vec<ObjectId>,
    pub tree: ObjectId,
    pub message: String,
    pub time: Timestamp,
}

/// What verify needs to know about one commit.
#[derive(Clone, Debug)]
pub struct CommitMeta {
    pub id: ObjectId,
    pub parents: Vec<ObjectId>,
    pub tree: ObjectId,
    pub message: String,
}

impl Store {
    /// Commits reachable from `to` but not from `from`, newest first.
    pub fn commits_between(&self, from: Option<ObjectId>, to: ObjectId) -> Result<Vec<CommitMeta>> {
        let walk = self.repo.rev_walk([to]).with_hidden(from).all().git(|| format!("walking history from {to}"))?;
        let mut out = Vec::new();
        for info in walk {
            let info = info.git(|| "walking memory history".into())?;
            let commit = self.repo.find_commit(info.id).git(|| format!("reading commit {}", info.id))?;
            let decoded = commit.decode().git(|| format!("decoding commit {}", info.id))?;
            out.push(CommitMeta {
                id: info.id,
                parents: decoded.parents().collect(),
                tree: decoded.tree(),
                message: decoded.message.to_string(),
            });
        }
        Ok(out)
    }

    /// The bytes of the `FORMAT` entry at the root of `tree`, if there is one.
    pub fn format_of_tree(&self, tree: ObjectId) -> Result<Option<Vec<u8>>> {
        let tree = self.repo.find_tree(tree).git(|| format!("reading tree {tree}"))?;
        match tree.find_entry("FORMAT") {
            Some(e) if e.mode().is_blob() => Ok(Some(self.read_blob(e.oid().to_owned())?)),
            Some(_) => Ok(Some(Vec::new())),
            None => Ok(None),
        }
    }
}

impl Store {
    /// Whether the commit `id` is in this repository's object database.
    pub fn has_commit(&self, id: ObjectId) -> Result<bool> {
        Ok(self.repo.find_commit(id).is_ok())
    }

    /// For each of `paths` whose content differs between commits `from` and `to`: how many commits
    /// in `from..to` changed it (walking at most `limit` commits, first parents).
    pub fn paths_changed_between(
        &self,
        from: ObjectId,
        to: ObjectId,
        paths: &[&str],
        limit: usize,
    ) -> Result<Vec<(String, usize)>> {
        let mut changed: Vec<(String, usize)> = Vec::new();
        for p in paths {
            if self.blob_at(from, p)? != self.blob_at(to, p)? {
                changed.push((p.to_string(), 0));
            }
        }
        if changed.is_empty() {
            return Ok(changed);
        }
        let walk = self
            .repo
            .rev_walk([to])
            .with_hidden([from])
            .first_parent_only()
            .all()
            .git(|| format!("walking {from}..{to}"))?;
        for info in walk.take(limit) {
            let info = info.git(|| "walking history".into())?;
            let commit = self.repo.find_commit(info.id).git(|| format!("reading commit {}", info.id))?;
            let parent = commit.parent_ids().next().map(|p| p.detach());
            for (path, count) in changed.iter_mut() {
                let now = self.blob_at(info.id, path)?;
                let before = match parent {
                    Some(p) => self.blob_at(p, path)?,
                    None => None,
                };
                if now != before {
                    *count += 1;
                }
            }
        }
        Ok(changed)
    }

    /// Whether the work tree has uncommitted changes (`git status --porcelain`, untracked files
    /// included). A bare repository is never dirty.
    pub fn work_tree_dirty(&self) -> Result<bool> {
        let Some(work) = self.work_dir() else { return Ok(false) };
        let work = work.to_string_lossy().into_owned();
        let out = self.run_git(&["--work-tree", &work, "status", "--porcelain", "--untracked-files=normal"])?;
        Ok(!out.is_empty())
    }
}
