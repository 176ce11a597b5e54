//! Reading memory back: the tips to read (the local ref and its remote-tracking copies), the record
//! entries of a commit's tree, and the parallel load that hashes and parses every record.

use super::GitContext;
use super::Store;
use crate::error::{Error, Result};
use crate::record::{parse, Kind, Problems, Record, RecordId};
use gix::ObjectId;
use rayon::prelude::*;
use std::collections::BTreeMap;

/// A record read from the ref, with where it came from.
#[derive(Clone, Debug)]
pub struct LoadedRecord {
    pub id: RecordId,
    pub record: Record,
    /// The git blob holding the record's bytes.
    pub blob: ObjectId,
}

/// Something on the ref that is not a well-formed record: a stray file, a file whose name is not
/// the hash of its bytes, or a record that does not parse.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StrayEntry {
    pub path: String,
    pub problems: Problems,
}

/// All records visible at the tips that were read.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// The tips read: the local memory ref first (if it exists), then remote-tracking copies.
    pub tips: Vec<(String, ObjectId)>,
    /// Every valid record, in id order, each once even if several tips hold it.
    pub records: Vec<LoadedRecord>,
    /// Everything that could not be read as a record, and records of a remote-tracking copy
    /// refused by the write filter (named `<ref>:<path>`).
    pub invalid: Vec<StrayEntry>,
    /// Records only a remote-tracking copy holds (fetched, not merged by `sync`), with that
    /// copy's ref: recall marks them.
    pub remote_only: BTreeMap<RecordId, String>,
    /// Records of a remote-tracking copy held back until `sync` merges them: supersessions,
    /// retractions and outcomes that would change a record of the local ref.
    pub held_back: usize,
}

/// A record file found in a tree, before its bytes are read.
#[derive(Clone, Debug)]
pub struct TreeEntry {
    pub kind: Kind,
    pub path: String,
    pub name_id: Option<RecordId>,
    pub blob: ObjectId,
}

impl Store {
    /// The local memory ref's commit, if the ref exists.
    pub fn local_tip(&self) -> Result<Option<ObjectId>> {
        let name = self.ref_name();
        let Some(mut r) = self.repo.try_find_reference(name).git(|| format!("reading {name}"))? else {
            return Ok(None);
        };
        // The memory ref must name a commit itself: writes move it with a compare-and-swap on
        // the id it holds, so a ref holding a tag (or a tree, or a blob) could never be moved and
        // every write would retry until it gave up. Said at once, with the way out.
        if let Some(id) = r.target().try_id().map(|id| id.to_owned()) {
            let kind = self.repo.find_header(id).map(|h| h.kind()).ok();
            if let Some(kind) = kind.filter(|k| *k != gix::object::Kind::Commit) {
                let what = match kind {
                    gix::object::Kind::Tag => "an annotated tag",
                    gix::object::Kind::Tree => "a tree",
                    gix::object::Kind::Blob => "a blob",
                    gix::object::Kind::Commit => "a commit",
                };
                return Err(Error::Integrity(format!(
                    "{name} points to {what} ({id}), not to a commit: the memory ref must be a branch of commits; \
                     point it back at its last commit with `git update-ref {name} <commit>`"
                )));
            }
        }
        Ok(Some(r.peel_to_id().git(|| format!("resolving {name}"))?.detach()))
    }

    /// The local ref (if any) and every remote-tracking ref holding the same branch
    /// (`refs/remotes/<remote>/<branch>` for a ref `refs/heads/<branch>`), sorted by name.
    pub fn tips(&self) -> Result<Vec<(String, ObjectId)>> {
        let mut tips = Vec::new();
        if let Some(local) = self.local_tip()? {
            tips.push((self.ref_name().to_string(), local));
        }
        let Some(branch) = self.ref_name().strip_prefix("refs/heads/") else { return Ok(tips) };
        let platform = self.repo.references().git(|| "listing references".into())?;
        let mut remote = Vec::new();
        for r in platform.remote_branches().git(|| "listing remote-tracking references".into())? {
            let mut r = r.map_err(|e| Error::Git {
                context: "reading a remote-tracking reference".into(),
                source: Box::new(gix::Error::from_error(e)),
            })?;
            let name = r.name().as_bstr().to_string();
            let rest = name.strip_prefix("refs/remotes/").unwrap_or_default();
            if rest.split_once('/').is_some_and(|(_, b)| b == branch) {
                let id = r.peel_to_id().git(|| format!("resolving {name}"))?.detach();
                remote.push((name, id));
            }
        }
        remote.sort();
        tips.extend(remote);
        Ok(tips)
    }

    /// The record entries of a memory tree, and everything in it that is not a record entry.
    pub fn entries_of_tree(&self, tree_id: ObjectId) -> Result<(Vec<TreeEntry>, Vec<StrayEntry>)> {
        let stray = |path: String, why: &str| StrayEntry {
            path,
            problems: Problems(vec![crate::record::Problem::new("layout", why)]),
        };
        let mut entries = Vec::new();
        let mut strays = Vec::new();
        // A tree object that cannot be read is damage to the memory (exit 3, like any integrity
        // problem), not trouble with the environment: the root stops the read, a subtree is
        // reported as a problem at its path and the rest is read.
        let root = self
            .repo
            .find_tree(tree_id)
            .map_err(|e| Error::Integrity(format!("the memory tree {tree_id} cannot be read: {e}")))?;
        let missing = |path: String, id: &gix::oid, e: &dyn std::fmt::Display| {
            stray(path, &format!("its tree object {id} cannot be read ({e}); the repository is damaged: fetch the memory again or restore the object"))
        };
        for e in root.iter() {
            let e = e.git(|| format!("decoding memory tree {tree_id}"))?;
            let name = e.filename().to_string();
            if name == "FORMAT" {
                continue;
            }
            // The forge area: the CI files a pull request into the memory branch runs from
            // (`git neo init --ci`), checked here to hold exactly what is allowed.
            if let Some(problem) = super::forge::check_root_entry(&self.repo, &name, e.mode(), e.oid()) {
                match problem {
                    Ok(()) => {}
                    Err((path, why)) => strays.push(stray(path, &why)),
                }
                continue;
            }
            let Some(kind) = Kind::from_dir(&name).filter(|_| e.mode().is_tree()) else {
                strays.push(stray(
                    name,
                    "is not FORMAT, a record directory (facts, attempts, supersessions, outcomes, retractions, sources) or the forge area (.github/workflows/*.yml, .gitlab-ci.yml)",
                ));
                continue;
            };
            let kind_tree = match self.repo.find_tree(e.oid().to_owned()) {
                Ok(t) => t,
                Err(err) => {
                    strays.push(missing(name, e.oid(), &err));
                    continue;
                }
            };
            for fan in kind_tree.iter() {
                let fan = fan.git(|| format!("decoding {name}/"))?;
                let fan_name = fan.filename().to_string();
                let fan_path = format!("{name}/{fan_name}");
                if !fan.mode().is_tree() || fan_name.len() != 2 || !crate::record::id::is_lower_hex(&fan_name) {
                    strays.push(stray(fan_path, "is not a two-hex-digit fan-out directory"));
                    continue;
                }
                let leaf_tree = match self.repo.find_tree(fan.oid().to_owned()) {
                    Ok(t) => t,
                    Err(err) => {
                        strays.push(missing(fan_path, fan.oid(), &err));
                        continue;
                    }
                };
                for leaf in leaf_tree.iter() {
                    let leaf = leaf.git(|| format!("decoding {fan_path}/"))?;
                    let file = leaf.filename().to_string();
                    let path = format!("{fan_path}/{file}");
                    if !leaf.mode().is_blob() {
                        strays.push(stray(path, "is not a regular file"));
                        continue;
                    }
                    let name_id = file.strip_suffix(".md").and_then(RecordId::from_hex);
                    match name_id {
                        Some(id) if id.to_hex()[..2] != fan_name => {
                            strays.push(stray(path, "is in the wrong fan-out directory for its id"));
                        }
                        Some(_) => entries.push(TreeEntry { kind, path, name_id, blob: leaf.oid().to_owned() }),
                        None => strays.push(stray(path, "is not named <64-hex-digit id>.md")),
                    }
                }
            }
        }
        Ok((entries, strays))
    }

    /// Read, hash and parse every record visible at the tips (see [`Store::tips`]).
    ///
    /// The local ref is what this clone wrote or merged; a remote-tracking copy is whatever the
    /// last `git fetch` brought, from any remote, and nobody here has looked at it. So what only a
    /// copy holds is read the way a write is checked: a record the write filter refuses (a secret,
    /// text that gives the reader instructions) is left out and reported, and a record that
    /// would change what the local ref holds (a supersession, retraction or outcome naming one of
    /// its records) waits for `sync`. A fetch can add memory, marked as fetched; it can never
    /// hide or rescore what was merged.
    pub fn load(&self) -> Result<Snapshot> {
        let tips = self.tips()?;
        let local = tips.first().filter(|(n, _)| n == self.ref_name()).map(|(_, c)| *c);
        let mut by_path: BTreeMap<String, (TreeEntry, Option<String>)> = BTreeMap::new();
        let mut invalid = Vec::new();
        let mut seen_trees = Vec::new();
        for (name, c) in &tips {
            let tree = self.tree_of(*c)?;
            if seen_trees.contains(&tree) {
                continue;
            }
            seen_trees.push(tree);
            let (entries, strays) = self.entries_of_tree(tree)?;
            let origin = (Some(*c) != local).then(|| name.clone());
            for e in entries {
                by_path.entry(e.path.clone()).or_insert((e, origin.clone()));
            }
            invalid.extend(strays.into_iter().map(|mut s| {
                if let Some(o) = &origin {
                    s.path = format!("{o}:{}", s.path);
                }
                s
            }));
        }
        let mut origin_of: BTreeMap<RecordId, String> = BTreeMap::new();
        let mut entries = Vec::with_capacity(by_path.len());
        for (e, origin) in by_path.into_values() {
            if let (Some(o), Some(id)) = (origin, e.name_id) {
                origin_of.insert(id, o);
            }
            entries.push(e);
        }
        let (mut records, bad) = self.read_entries(&entries)?;
        invalid.extend(bad);
        let mut held_back = 0;
        if !origin_of.is_empty() {
            let local_ids: std::collections::HashSet<RecordId> =
                records.iter().filter(|r| !origin_of.contains_key(&r.id)).map(|r| r.id).collect();
            // The filter over what only a copy holds, in parallel (a fresh clone holds nothing else).
            let mut refused: BTreeMap<RecordId, Vec<crate::record::Problem>> = records
                .par_iter()
                .filter(|r| origin_of.contains_key(&r.id))
                .filter_map(|r| {
                    let problems = crate::redact::check(&r.record);
                    (!problems.is_empty()).then_some((r.id, problems))
                })
                .collect();
            records.retain(|r| {
                let Some(origin) = origin_of.get(&r.id) else { return true };
                if let Some(problems) = refused.remove(&r.id) {
                    invalid.push(StrayEntry {
                        path: format!("{origin}:{}", Record::path(r.record.kind, &r.id)),
                        problems: Problems(problems),
                    });
                    return false;
                }
                let changes_local = match &r.record.payload {
                    crate::record::Payload::Supersession(x) => local_ids.contains(&x.old),
                    crate::record::Payload::Retraction(x) => local_ids.contains(&x.target),
                    crate::record::Payload::Outcome(x) => local_ids.contains(&x.target),
                    _ => false,
                };
                held_back += usize::from(changes_local);
                !changes_local
            });
            origin_of.retain(|id, _| records.binary_search_by_key(id, |r| r.id).is_ok());
        }
        // A remote-tracking copy can still hold a record purged here until the rewritten history
        // is pushed; it stays purged.
        if tips.len() > 1 {
            let purged = self.locally_purged();
            if !purged.is_empty() {
                records.retain(|r| !purged.contains(&r.id));
            }
        }
        Ok(Snapshot { tips, records, invalid, remote_only: origin_of, held_back })
    }

    /// Read, hash and parse the union of the records in `commits`' trees.
    pub fn load_commits(&self, commits: &[ObjectId]) -> Result<Snapshot> {
        let mut by_path: BTreeMap<String, TreeEntry> = BTreeMap::new();
        let mut invalid = Vec::new();
        let mut seen_trees = Vec::new();
        for &c in commits {
            let tree = self
                .repo
                .find_commit(c)
                .git(|| format!("reading memory commit {c}"))?
                .tree_id()
                .git(|| format!("reading the tree of {c}"))?
                .detach();
            if seen_trees.contains(&tree) {
                continue;
            }
            seen_trees.push(tree);
            let (entries, strays) = self.entries_of_tree(tree)?;
            for e in entries {
                by_path.entry(e.path.clone()).or_insert(e);
            }
            invalid.extend(strays);
        }
        let entries: Vec<TreeEntry> = by_path.into_values().collect();
        let (records, bad) = self.read_entries(&entries)?;
        invalid.extend(bad);
        Ok(Snapshot { tips: Vec::new(), records, invalid, ..Default::default() })
    }

    /// Hash and parse entries in parallel. Objects that cannot be read are integrity errors;
    /// records that do not hash to their name or do not parse are reported, not fatal.
    pub fn read_entries(&self, entries: &[TreeEntry]) -> Result<(Vec<LoadedRecord>, Vec<StrayEntry>)> {
        let shared = self.repo.clone().into_sync();
        let results: Vec<Result<Result<LoadedRecord, StrayEntry>>> = entries
            .par_iter()
            .map_init(
                || {
                    let mut repo = shared.to_thread_local();
                    // Records are small and similar, so packs store most as deltas; a roomy delta
                    // base cache avoids inflating the same bases again and again.
                    repo.objects.set_pack_cache(|| {
                        Box::new(gix::odb::pack::cache::lru::MemoryCappedHashmap::new(64 * 1024 * 1024))
                    });
                    repo
                },
                |repo, e| {
                    // A blob that cannot be read is reported at its path, like any damaged record:
                    // the rest is still read, and verify lists every such problem.
                    // Bounded before read: the object's header says its size, so a stranger's
                    // oversized blob is named invalid without being inflated into memory.
                    if let Some(Err(p)) =
                        repo.find_header(e.blob).ok().map(|h| crate::record::bounds::check_size(h.size()))
                    {
                        return Ok(Err(StrayEntry { path: e.path.clone(), problems: Problems(vec![p]) }));
                    }
                    Ok(match repo.find_blob(e.blob) {
                        Ok(blob) => check_entry(e, &blob.data),
                        Err(err) => Err(StrayEntry {
                            path: e.path.clone(),
                            problems: Problems(vec![crate::record::Problem::new(
                                "file",
                                format!("its blob {} cannot be read ({err}); the repository is damaged", e.blob),
                            )]),
                        }),
                    })
                },
            )
            .collect();
        let mut records = Vec::with_capacity(entries.len());
        let mut invalid = Vec::new();
        for r in results {
            match r? {
                Ok(rec) => records.push(rec),
                Err(bad) => invalid.push(bad),
            }
        }
        records.sort_by_key(|r| r.id);
        Ok((records, invalid))
    }

    /// The raw bytes of a record's blob.
    pub fn read_blob(&self, blob: ObjectId) -> Result<Vec<u8>> {
        Ok(self
            .repo
            .find_blob(blob)
            .map_err(|e| Error::Integrity(format!("cannot read blob {blob}: {e}")))?
            .data
            .clone())
    }
}

fn check_entry(e: &TreeEntry, bytes: &[u8]) -> Result<LoadedRecord, StrayEntry> {
    let id = RecordId::of_bytes(bytes);
    let bad = |field: &str, msg: String| StrayEntry {
        path: e.path.clone(),
        problems: Problems(vec![crate::record::Problem::new(field, msg)]),
    };
    if e.name_id != Some(id) {
        return Err(bad(
            "file",
            format!("its bytes hash to {id}, not to its file name: the record was modified after it was written"),
        ));
    }
    match parse::parse(bytes) {
        Ok(record) if record.kind == e.kind => Ok(LoadedRecord { id, record, blob: e.blob }),
        Ok(record) => Err(bad("kind", format!("is {} but the file is under {}/", record.kind, e.kind.dir()))),
        Err(problems) => Err(StrayEntry { path: e.path.clone(), problems }),
    }
}
