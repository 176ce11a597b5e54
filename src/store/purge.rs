//! Physical removal: rewriting the memory ref's history without one record file (a leaked
//! secret), and reading the purge notes (`Neo-Purge: <id>` trailers) that say which records were
//! removed on purpose, so verify accepts references to them and a merge never brings them back.
//!
//! This is the one operation that breaks the append-only history. Every commit that held the
//! file is rewritten (same author, committer, time and message; signatures are dropped, since
//! they no longer match), every descendant is rewritten onto its new parents, and a final commit
//! that changes nothing carries the note. The ref moves with a compare-and-swap from the old tip,
//! so a write that lands meanwhile makes the purge fail cleanly instead of being lost.

use super::GitContext;
use super::{Identity, Store};
use crate::error::{Error, Result};
use crate::record::{Kind, Record, RecordId, Timestamp};
use gix::ObjectId;
use std::collections::{BTreeSet, HashMap};

/// What a history rewrite did.
#[derive(Clone, Debug)]
pub struct Rewrite {
    pub old_tip: ObjectId,
    pub new_tip: ObjectId,
    /// Commits written anew (those that held the file, and their descendants).
    pub rewritten: usize,
    /// Commits walked.
    pub commits: usize,
}

/// What commit messages may quote of a record with this summary: the summary itself and the
/// 60-character cut git-neo's messages use.
pub fn scrub_texts(summary: &str) -> Vec<String> {
    let cut: String = summary.chars().take(60).collect();
    let mut out = vec![summary.to_string()];
    if cut.chars().count() < summary.chars().count() {
        out.push(format!("{cut}…"));
    }
    out
}

/// The ids (or id prefixes) named by `Neo-Purge:` trailers in a commit message.
pub fn purge_trailers(message: &str) -> impl Iterator<Item = &str> {
    message.lines().filter_map(|l| l.strip_prefix("Neo-Purge:")).map(str::trim).filter(|p| p.len() >= 4)
}

impl Store {
    /// Whether `commit`'s tree holds `path`.
    pub fn commit_has_path(&self, commit: ObjectId, path: &str) -> Result<bool> {
        let tree = self.tree_of(commit)?;
        let t = self.repo.find_tree(tree).git(|| format!("reading tree {tree}"))?;
        Ok(t.lookup_entry_by_path(path).git(|| format!("looking up {path}"))?.is_some())
    }

    /// `tree` without the blob at `path` (the same id when there is none).
    fn tree_without(&self, tree: ObjectId, path: &str) -> Result<ObjectId> {
        let t = self.repo.find_tree(tree).git(|| format!("reading tree {tree}"))?;
        if t.lookup_entry_by_path(path).git(|| format!("looking up {path}"))?.is_none() {
            return Ok(tree);
        }
        let mut editor = t.edit().git(|| "starting a tree edit".into())?;
        editor.remove(path).git(|| format!("removing {path}"))?;
        Ok(editor.write().git(|| "writing a rewritten tree".into())?.detach())
    }

    /// Rewrite the history of `tip` without any of `paths`: returns the new tip, the number of
    /// commits written anew and the number walked. Objects only; no ref moves.
    ///
    /// A commit left empty by the removal (it only added the purged record) is dropped, and every
    /// text in `scrub` (the record's subject, which commit messages quote) is replaced by
    /// `[purged]` in the messages that remain. The result depends only on the input history and
    /// the arguments, so two clones purging the same record arrive at the same commits.
    pub fn rewrite_history(
        &self,
        tip: ObjectId,
        paths: &[String],
        scrub: &[String],
    ) -> Result<(ObjectId, usize, usize)> {
        // Every commit with its parents, then parents before children (iterative post-order).
        let mut parents: HashMap<ObjectId, Vec<ObjectId>> = HashMap::new();
        let mut todo = vec![tip];
        while let Some(id) = todo.pop() {
            if parents.contains_key(&id) {
                continue;
            }
            let commit = self.repo.find_commit(id).git(|| format!("reading commit {id}"))?;
            let ps: Vec<ObjectId> = commit.parent_ids().map(|p| p.detach()).collect();
            todo.extend(ps.iter().copied());
            parents.insert(id, ps);
        }
        let mut order = Vec::with_capacity(parents.len());
        let mut done: BTreeSet<ObjectId> = BTreeSet::new();
        let mut stack = vec![(tip, false)];
        while let Some((id, expanded)) = stack.pop() {
            if done.contains(&id) {
                continue;
            }
            if expanded {
                done.insert(id);
                order.push(id);
            } else {
                stack.push((id, true));
                stack.extend(parents[&id].iter().filter(|p| !done.contains(*p)).map(|p| (*p, false)));
            }
        }

        let scrub: Vec<&String> = scrub.iter().filter(|s| s.trim().len() >= 3).collect();
        let mut map: HashMap<ObjectId, ObjectId> = HashMap::with_capacity(order.len());
        let mut trees: HashMap<ObjectId, ObjectId> = HashMap::with_capacity(order.len());
        let mut rewritten = 0;
        for id in &order {
            let commit = self.repo.find_commit(*id).git(|| format!("reading commit {id}"))?;
            let decoded = commit.decode().git(|| format!("decoding commit {id}"))?;
            let tree = decoded.tree();
            let mut new_tree = tree;
            for path in paths {
                new_tree = self.tree_without(new_tree, path)?;
            }
            let new_parents: Vec<ObjectId> = parents[id].iter().map(|p| map[p]).collect();
            trees.insert(*id, tree);
            // Emptied by the purge: the commit changed its parent's tree before, and no longer does.
            if let ([old_parent], [new_parent]) = (parents[id].as_slice(), new_parents.as_slice()) {
                if new_tree != tree && trees.get(new_parent).copied() == Some(new_tree) && trees[old_parent] != tree {
                    map.insert(*id, *new_parent);
                    rewritten += 1;
                    continue;
                }
            }
            let message = decoded.message.to_string();
            let mut scrubbed = message.clone();
            for s in &scrub {
                scrubbed = scrubbed.replace(s.as_str(), "[purged]");
            }
            if new_tree == tree && new_parents == parents[id] && scrubbed == message {
                map.insert(*id, *id);
                continue;
            }
            let mut owned: gix::objs::Commit = decoded.into_owned().git(|| format!("reading commit {id}"))?;
            owned.tree = new_tree;
            owned.parents = new_parents.into_iter().collect();
            owned.message = scrubbed.into();
            owned.extra_headers.retain(|(k, _)| k != "gpgsig" && k != "gpgsig-sha256");
            let new_id = self.repo.write_object(&owned).git(|| "writing a rewritten commit".into())?.detach();
            map.insert(*id, new_id);
            trees.insert(new_id, new_tree);
            rewritten += 1;
        }
        Ok((map[&tip], rewritten, order.len()))
    }

    /// Rewrite the local memory ref's whole history without `path`, then add a commit with
    /// `note` as its message on top. Fails without changing anything if the ref moves meanwhile.
    pub fn rewrite_without(
        &self,
        path: &str,
        scrub: &[String],
        note: &str,
        who: &Identity,
        now: Timestamp,
    ) -> Result<Rewrite> {
        let old_tip = self.local_tip()?.ok_or_else(|| {
            Error::invalid(
                "ref",
                format!("{} does not exist here; there is no local history to rewrite", self.ref_name()),
            )
        })?;
        let (base, rewritten, commits) = self.rewrite_history(old_tip, &[path.to_string()], scrub)?;
        let sig = who.signature(now);
        let commit = gix::objs::Commit {
            tree: self.tree_of(base)?,
            parents: [base].into_iter().collect(),
            author: sig.clone(),
            committer: sig,
            encoding: None,
            message: note.into(),
            extra_headers: Vec::new(),
        };
        let new_tip = self.repo.write_object(&commit).git(|| "writing the purge note".into())?.detach();
        let reflog = note.lines().next().unwrap_or("neo: purge");
        if !self.set_ref(Some(old_tip), new_tip, reflog, who, now)? {
            return Err(Error::invalid(
                "ref",
                format!("{} moved while its history was being rewritten; run the purge again", self.ref_name()),
            ));
        }
        Ok(Rewrite { old_tip, new_tip, rewritten, commits })
    }

    /// Apply purges made elsewhere (named by purge notes in fetched history) to the local memory
    /// ref: rewrite its history without those records, if it holds any of them.
    pub fn apply_purges(&self, ids: &[RecordId], who: &Identity, now: Timestamp) -> Result<Option<Rewrite>> {
        let Some(old_tip) = self.local_tip()? else { return Ok(None) };
        let (paths, scrub) = self.purge_targets(old_tip, ids)?;
        let (new_tip, rewritten, commits) = self.rewrite_history(old_tip, &paths, &scrub)?;
        self.remember_purged(ids)?;
        if new_tip == old_tip {
            return Ok(None);
        }
        if !self.set_ref(Some(old_tip), new_tip, "neo: apply purge from the remote", who, now)? {
            return Err(Error::Contention { ref_name: self.ref_name().into(), attempts: 1 });
        }
        Ok(Some(Rewrite { old_tip, new_tip, rewritten, commits }))
    }

    /// For records purged elsewhere: every path they could have, and the texts to scrub from
    /// commit messages (read from the copy in `tip`'s tree, if it holds one).
    pub fn purge_targets(&self, tip: ObjectId, ids: &[RecordId]) -> Result<(Vec<String>, Vec<String>)> {
        let paths: Vec<String> = ids.iter().flat_map(|id| Kind::ALL.iter().map(|k| Record::path(*k, id))).collect();
        let tree = self.repo.find_tree(self.tree_of(tip)?).git(|| format!("reading the tree of {tip}"))?;
        let mut scrub = Vec::new();
        for path in &paths {
            let Some(entry) = tree.lookup_entry_by_path(path).git(|| format!("looking up {path}"))? else { continue };
            let blob = self.read_blob(entry.object_id())?;
            if let Ok(record) = crate::record::parse::parse(&blob) {
                scrub.extend(scrub_texts(&record.summary()));
            }
        }
        Ok((paths, scrub))
    }

    /// Where this clone lists the records purged here or applied from a remote: reads skip them
    /// in remote-tracking copies that still hold them until the rewritten history is pushed.
    fn purged_list(&self) -> std::path::PathBuf {
        self.caches().purged()
    }

    /// Add `ids` to this clone's purged list.
    pub fn remember_purged(&self, ids: &[RecordId]) -> Result<()> {
        let mut all = self.locally_purged();
        all.extend(ids.iter().copied());
        let path = self.purged_list();
        let io = |e| Error::Io { context: format!("writing {}", path.display()), source: e };
        std::fs::create_dir_all(path.parent().expect("has a parent")).map_err(io)?;
        let text: String = all.iter().map(|id| format!("{}\n", id.to_hex())).collect();
        std::fs::write(&path, text).map_err(io)
    }

    /// The ids in this clone's purged list (empty when there is none).
    pub fn locally_purged(&self) -> BTreeSet<RecordId> {
        std::fs::read_to_string(self.purged_list())
            .map(|t| t.lines().filter_map(|l| RecordId::from_hex(l.trim())).collect())
            .unwrap_or_default()
    }

    /// Ids (or id prefixes of at least 4 digits) purged in the history of `tip`.
    pub fn purged_ids(&self, tip: ObjectId) -> Result<Vec<String>> {
        Ok(self.purge_notes(None, tip)?.into_iter().map(|p| p.to_ascii_lowercase()).collect())
    }

    /// The `Neo-Purge:` values in commits reachable from `to` and not from `from` that document
    /// a purge. A purge rewrites history without the record and ends with the commit carrying the
    /// note, so that commit's tree never holds it; a trailer on a commit whose own tree still
    /// holds the record purged nothing (it was written by hand or by another tool) and is no
    /// purge note: see [`Store::false_purge_notes`].
    pub fn purge_notes(&self, from: Option<ObjectId>, to: ObjectId) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for c in self.commits_between(from, to)? {
            for note in purge_trailers(&c.message) {
                if !self.tree_holds_prefix(c.tree, note)? {
                    out.push(note.to_string());
                }
            }
        }
        Ok(out)
    }

    /// `Neo-Purge:` trailers in commits reachable from `to` and not from `from` that purged
    /// nothing (the commit's own tree still holds the record they name), as (commit, note).
    pub fn false_purge_notes(&self, from: Option<ObjectId>, to: ObjectId) -> Result<Vec<(ObjectId, String)>> {
        let mut out = Vec::new();
        for c in self.commits_between(from, to)? {
            for note in purge_trailers(&c.message) {
                if self.tree_holds_prefix(c.tree, note)? {
                    out.push((c.id, note.to_string()));
                }
            }
        }
        Ok(out)
    }

    /// Whether the memory tree `tree` holds a record whose id starts with `prefix`.
    fn tree_holds_prefix(&self, tree: ObjectId, prefix: &str) -> Result<bool> {
        let prefix = prefix.to_ascii_lowercase();
        if prefix.len() < 2 || !crate::record::id::is_lower_hex(&prefix) {
            return Ok(false);
        }
        let t = self.repo.find_tree(tree).git(|| format!("reading tree {tree}"))?;
        for kind in Kind::ALL {
            let dir = format!("{}/{}", kind.dir(), &prefix[..2]);
            let Some(entry) = t.lookup_entry_by_path(&dir).git(|| format!("looking up {dir}"))? else { continue };
            let Ok(fan) = self.repo.find_tree(entry.object_id()) else { continue };
            for e in fan.iter().flatten() {
                if e.filename().to_string().starts_with(prefix.as_str()) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}
