//! Derived caches under the repository's common git dir (`.git/neo/index/`, shared by linked
//! worktrees): a lexical index (tantivy, BM25) and a vector index (usearch, cosine, f16), both
//! rebuildable from the records at any time and never the truth.
//!
//! Every cache carries a stamp: cache format, the memory tips it reflects, the embedding model id
//! and dimension. On open, a cache whose stamp matches is used as is; one whose tips moved catches
//! up by indexing exactly the records it lacks; one with
//! another format or model, an unreadable file, or a record it holds that is no longer on the ref
//! (a purge) is rebuilt, and the caller is told why. Deleting `.git/neo/` is always safe.
//!
//! Which records a cache lacks comes from the caller's tree diff of the stamped tip and the new one
//! when that is possible (one tip each, the new descending from the old, additions only), and from
//! comparing id sets otherwise.

mod flat;
pub(crate) mod lexical;
pub mod passages;
mod vectors;

pub use lexical::Lexical;
pub use vectors::{key as vector_key, split_key, Fold, Vectors};

use crate::embed::Embedder;
use crate::record::{Payload, Record, RecordId};
use crate::state::State;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Bumped whenever the on-disk layout of the caches changes (3: the lexical analyzer drops
/// English function words; vectors are keyed by record and passage ([`vector_texts`]) and may fall
/// short of the records after an interrupted build; 4: the lexical analyzer adds English stems
/// and identifier parts, `lexical::terms`; 5: lexical postings keep term frequencies but no
/// positions, which no query reads, and passages cut long paragraphs at sentences; 6: a passage
/// does not repeat a subject it already says, and a build no longer drops passages, which one
/// before this could; 7: the stamp holds a checksum of the id list, [`Stamp::ids_hash`]).
pub const CACHE_FORMAT: u32 = 7;

/// Records embedded between saves while building vectors: an interrupted build loses at most
/// this much work.
const SAVE_EVERY: usize = 2_048;

/// Search width of a near-duplicate scan ([`Indexes::near_pairs`]); recall uses a wider one.
pub const NEAR_WIDTH: usize = 48;

// The error type lives with the library's other errors, which depend on nothing above them.
pub use crate::error::IndexError;

/// What a cache reflects.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub format: u32,
    /// The memory tips (commit ids, sorted) whose records are indexed.
    pub tips: Vec<String>,
    /// Records indexed.
    pub records: usize,
    /// The embedding model of the vector index, if there is one.
    pub model: Option<String>,
    pub dim: usize,
    /// Vectors the records need (one per passage); fewer in the index after an interrupted build.
    #[serde(default)]
    pub vectors: usize,
    /// BLAKE3 of the id list's bytes: a record's position is its key in both indexes, so an id
    /// list changed on disk (two entries swapped keep every size) would answer with the wrong
    /// records. A list that does not hash to this is rebuilt.
    #[serde(default)]
    pub ids_hash: String,
}

/// Up to this many records missing from the lexical index are committed on a thread of their own
/// ([`lexical::Lexical::add_behind`]) while the caller goes on (a recall embeds its query), once
/// a warm session holds more than [`lexical::HELD_UP_TO`] in memory.
const LEXICAL_BEHIND_UP_TO: usize = 64;

/// What opening the caches did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Refresh {
    UpToDate,
    CaughtUp { added: usize, embedded: usize },
    Rebuilt { reason: String, records: usize, embedded: usize },
}

/// The texts of a record that the vector index embeds, one per passage: a fact's subject and
/// body ([`passages::split`]: one passage when it fits the model's window, several for a long
/// body; the subject is not repeated where the passage already says it), each followed by its
/// type, scope and tags (measured on the recall fixture: without them hybrid recall@5 fell from
/// 0.984 to 0.937); an attempt's whole text.
pub fn vector_texts(record: &Record) -> Vec<String> {
    match &record.payload {
        Payload::Fact(f) => passages::split(&f.subject, &record.body)
            .into_iter()
            .map(|p| format!("{}\n{} {} {}", p.text, f.fact_type, f.scope, f.tags.join(" ")))
            .collect(),
        Payload::Attempt(_) => index_text(record).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// The text of a record that the lexical index sees (and, for facts, type, scope and tags too).
pub fn index_text(record: &Record) -> Option<String> {
    match &record.payload {
        Payload::Fact(f) => {
            Some(format!("{}\n{}\n{} {} {}", f.subject, record.body, f.fact_type, f.scope, f.tags.join(" ")))
        }
        Payload::Attempt(a) => Some(format!(
            "{}\n{}\n{}\n{}\n{}",
            a.task,
            a.action,
            a.observation,
            a.inference.as_deref().unwrap_or(""),
            record.body
        )),
        _ => None,
    }
}

/// The open caches.
pub struct Indexes {
    dir: PathBuf,
    pub stamp: Stamp,
    /// Record ids in insertion order; a record's position is its key in both indexes.
    ids: Vec<RecordId>,
    pub lexical: Lexical,
    pub vectors: Option<Vectors>,
    /// Vectors added since the vector files were last written. A catch-up of a few records
    /// (a warm session after its own write) leaves them in memory: rewriting the new part's file
    /// cost 1.5–2 ms a write at 10k records and grows with the part (up to an eighth of the
    /// index). They are written every [`VECTORS_SAVE_EVERY`], and when the caches are let go
    /// ([`Indexes::drop`]). Meanwhile the stamp counts them, so another process that opens the
    /// caches finds the vector files short and embeds what they lack.
    unsaved_vectors: usize,
    /// How many ids (a prefix of `ids`, which only grows) the checksum hasher has taken, and its
    /// state: each save adds the new ids instead of hashing every one again (1–2 ms a write at
    /// 100,000 records).
    hashed: Option<(usize, blake3::Hasher)>,
    /// Each id's key (its position in `ids`), made at the first question by id and grown with
    /// `ids`: measuring similarity to a recall's candidates scanned every id for them (0.5 ms of
    /// a warm recall at 10k records).
    keys: std::sync::OnceLock<HashMap<RecordId, u64>>,
}

/// A warm session writes the vector files at least once per this many vectors added.
const VECTORS_SAVE_EVERY: usize = 32;

impl Drop for Indexes {
    /// Vectors a catch-up left in memory are written, and the lexical documents it held are
    /// committed, unless another process changed the caches since (its stamp is not this one's):
    /// then its files stand.
    fn drop(&mut self) {
        // A fold built beside that finished is swapped in rather than thrown away.
        let vectors = self.vectors.as_ref().is_some_and(|v| self.unsaved_vectors > 0 || v.fold_built());
        if !vectors && self.lexical.held() == 0 {
            return;
        }
        let _ = self.lexical.settle();
        // Without waiting: this process may hold the lock itself (an open that gave up on these
        // caches to rebuild them), and then these files are about to go anyway.
        let Ok(lock) = std::fs::OpenOptions::new().write(true).open(Self::lock_path(&self.dir)) else { return };
        if lock.try_lock().is_err() {
            return;
        }
        let on_disk = self.stamp_on_disk();
        if on_disk.as_ref() == Some(&self.stamp) {
            let ordinals = self.ids.len() as u64;
            if let Some(v) = self.vectors.as_mut().filter(|_| vectors) {
                // A cache: a failure here only means the next process embeds these again.
                let _ = v.save(ordinals, Fold::Later);
            }
            // Likewise: the next process to search commits what is missing.
            let _ = self.lexical.commit_held();
        }
    }
}

fn cache_err(path: &Path, message: impl std::fmt::Display) -> IndexError {
    IndexError::Cache { path: path.display().to_string(), message: message.to_string() }
}

impl Indexes {
    /// Open the caches in `dir` for the memory `state` at `tips`, catching up or rebuilding as
    /// needed. With an `embedder`, vectors are kept too (and embedded for records that lack them,
    /// such as after the model was installed). `progress(done, total)` reports embedding work.
    ///
    /// With `lexical` false the lexical index may be left behind the id list (a write's similarity
    /// check needs only vectors, and a commit of the lexical index is most of a small catch-up's
    /// cost); whoever searches it next opens or refreshes with `lexical` true, which adds what it
    /// lacks.
    pub fn open(
        dir: &Path,
        state: &State,
        tips: &[String],
        added_since: &dyn Fn(&[String]) -> Option<Vec<RecordId>>,
        mut embedder: Option<&mut dyn Embedder>,
        lexical: bool,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(Indexes, Refresh), IndexError> {
        let _lock = Self::lock(dir)?;
        let mut tips = tips.to_vec();
        tips.sort();
        let want_model = embedder.as_ref().map(|e| (e.model_id().to_string(), e.dim()));
        let reason = match Self::try_open(dir, want_model.as_ref()) {
            Ok(mut idx) => {
                // Vectors fall short of the records after an interrupted build (each finished part
                // is saved as it completes): catching up embeds only the rest.
                let vectors_complete = idx.vectors.as_ref().is_none_or(|v| v.len() == idx.stamp.vectors);
                if idx.stamp.tips == tips
                    && idx.stamp.records == idx.ids.len()
                    && (want_model.is_none() || idx.stamp.model.is_some())
                    && vectors_complete
                    && (!lexical || idx.lexical_complete())
                {
                    return Ok((idx, Refresh::UpToDate));
                }
                // The records added since the stamped tips, from a tree diff when the caller can
                // tell (O(changes)); otherwise compare id sets (O(records)).
                let added = added_since(&idx.stamp.tips);
                match idx.catch_up(
                    state,
                    (&tips, added),
                    embedder.as_mut().map(|e| &mut **e as &mut dyn Embedder),
                    lexical,
                    progress,
                    // Written here and now: a process that opens the caches may not live long.
                    &mut None,
                ) {
                    Ok(Some(r)) => return Ok((idx, r)),
                    Ok(None) => "a record it holds is no longer on the ref".to_string(),
                    Err(IndexError::Embed(e)) => return Err(IndexError::Embed(e)),
                    Err(e) => format!("catching up failed ({e})"),
                }
            }
            Err(reason) => reason,
        };
        Self::rebuild(dir, state, &tips, embedder, progress, reason)
    }

    fn lock_path(dir: &Path) -> PathBuf {
        dir.parent().unwrap_or(dir).join("index.lock")
    }

    /// One process at a time brings the caches up to date: a second recall waits for the first
    /// (an OS file lock, released when the file is closed, even if the holder dies), then finds
    /// the cache current.
    fn lock(dir: &Path) -> Result<std::fs::File, IndexError> {
        let parent = dir.parent().unwrap_or(dir);
        std::fs::create_dir_all(parent).map_err(|e| cache_err(parent, e))?;
        let lock_path = Self::lock_path(dir);
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| cache_err(&lock_path, e))?;
        lock.lock().map_err(|e| cache_err(&lock_path, e))?;
        Ok(lock)
    }

    /// Bring caches this process already holds open up to `tips`, in place (a long-lived session
    /// after its own write: no reopening of every index file). `Ok(None)` when that cannot be
    /// done here — another process changed the caches since, or a record they hold is gone — and
    /// the caller opens them afresh with [`Indexes::open`].
    pub fn refresh(
        &mut self,
        state: &State,
        tips: &[String],
        added_since: &dyn Fn(&[String]) -> Option<Vec<RecordId>>,
        embedder: Option<&mut dyn Embedder>,
        lexical: bool,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Option<Refresh>, IndexError> {
        // A commit of the last catch-up still running behind holds the lock: let it land first.
        self.lexical.settle().map_err(|e| cache_err(&self.dir, e))?;
        let mut lock = Some(Self::lock(&self.dir)?);
        let on_disk = self.stamp_on_disk();
        if on_disk.as_ref() != Some(&self.stamp) || (embedder.is_some() && self.vectors.is_none()) {
            return Ok(None);
        }
        // Another process may have committed the records this one holds in memory.
        self.lexical.reconcile().map_err(|e| cache_err(&self.dir, e))?;
        let mut tips = tips.to_vec();
        tips.sort();
        if self.stamp.tips == tips && (!lexical || self.lexical_complete()) {
            return Ok(Some(Refresh::UpToDate));
        }
        let added = if self.stamp.tips == tips { Some(Vec::new()) } else { added_since(&self.stamp.tips) };
        self.catch_up(state, (&tips, added), embedder, lexical, progress, &mut lock)
    }

    /// Lay the vectors out for recall's exact scan ([`Vectors::prepare_scan`]): what a session
    /// that answers one request after another does between them.
    pub fn prepare_scan(&mut self) -> Result<(), IndexError> {
        let ordinals = self.ids.len() as u64;
        match self.vectors.as_mut() {
            Some(v) => v.prepare_scan(ordinals).map_err(|e| cache_err(&self.dir, e)),
            None => Ok(()),
        }
    }

    /// Swap in a fold that finished building beside (a warm session calls this between
    /// commands, once its answer is out): otherwise the built index waits for the next save of
    /// the vectors, which a session that only recalls never makes. `Ok(false)` when there is
    /// none, or when another process wrote the caches since (the session's next catch-up opens
    /// them afresh and lets the fold go).
    pub fn land_fold(&mut self) -> Result<bool, IndexError> {
        if !self.vectors.as_ref().is_some_and(Vectors::fold_built) {
            return Ok(false);
        }
        // A commit of the last catch-up still running behind holds the lock: let it land first.
        self.lexical.settle().map_err(|e| cache_err(&self.dir, e))?;
        let _lock = Self::lock(&self.dir)?;
        let on_disk = self.stamp_on_disk();
        if on_disk.as_ref() != Some(&self.stamp) {
            return Ok(false);
        }
        let ordinals = self.ids.len() as u64;
        if let Some(v) = self.vectors.as_mut() {
            // The swap writes both parts: what was held back is on disk too.
            v.save(ordinals, Fold::Beside).map_err(|e| cache_err(&self.dir, e))?;
            self.unsaved_vectors = 0;
        }
        Ok(true)
    }

    /// Whether the caches in `dir` hold vectors (of some model, in this cache format): without
    /// them the first semantic open embeds every record.
    pub fn has_vectors(dir: &Path) -> bool {
        std::fs::read(Self::stamp_path(dir))
            .ok()
            .and_then(|b| serde_json::from_slice::<Stamp>(&b).ok())
            .is_some_and(|s| s.format == CACHE_FORMAT && s.model.is_some())
    }

    /// The stamp the caches' files carry now (another process may have written them since this
    /// one read it).
    fn stamp_on_disk(&self) -> Option<Stamp> {
        std::fs::read(Self::stamp_path(&self.dir)).ok().and_then(|b| serde_json::from_slice(&b).ok())
    }

    fn stamp_path(dir: &Path) -> PathBuf {
        dir.join("stamp.json")
    }

    fn try_open(dir: &Path, want_model: Option<&(String, usize)>) -> Result<Indexes, String> {
        let stamp_bytes = std::fs::read(Self::stamp_path(dir)).map_err(|_| "no cache yet".to_string())?;
        let stamp: Stamp =
            serde_json::from_slice(&stamp_bytes).map_err(|e| format!("the stamp is unreadable ({e})"))?;
        if stamp.format != CACHE_FORMAT {
            return Err(format!("cache format {} is not {CACHE_FORMAT}", stamp.format));
        }
        let have_model = stamp.model.clone().map(|m| (m, stamp.dim));
        if let (Some(want), Some(have)) = (want_model, &have_model) {
            if want != have {
                return Err(format!("the vectors were made by {} and the model is now {}", have.0, want.0));
            }
        }
        let ids = read_ids(&dir.join("ids")).map_err(|e| format!("the id list is unreadable ({e})"))?;
        // The stamp covers exactly the ids it was written with (a longer list is an interrupted
        // save, which the record count below catches; a changed one is refused here).
        let stamped = ids.get(..stamp.records).unwrap_or(&ids);
        let mut hasher = blake3::Hasher::new();
        for id in stamped {
            hasher.update(&id.0);
        }
        if hasher.finalize().to_hex().as_str() != stamp.ids_hash {
            return Err("the id list does not match its checksum".to_string());
        }
        let hashed = Some((stamped.len(), hasher));
        let lexical =
            Lexical::open(&dir.join("lexical")).map_err(|e| format!("the lexical index is unreadable ({e})"))?;
        let vectors = match (want_model, &have_model) {
            (Some((_, dim)), Some(_)) => {
                Some(Vectors::open(dir, *dim).map_err(|e| format!("the vector index is unreadable ({e})"))?)
            }
            (Some((_, dim)), None) => {
                Some(Vectors::create(dir, *dim).map_err(|e| format!("cannot create a vector index ({e})"))?)
            }
            _ => None,
        };
        Ok(Indexes {
            dir: dir.to_path_buf(),
            stamp,
            ids,
            lexical,
            vectors,
            unsaved_vectors: 0,
            hashed,
            keys: std::sync::OnceLock::new(),
        })
    }

    /// Whether the lexical index holds every record of the id list.
    pub fn lexical_complete(&self) -> bool {
        self.lexical.num_docs() == self.ids.len() as u64
    }

    /// The records of the id list the lexical index lacks (it lags after a write that left it
    /// behind), with the key of the first. `None`: one of them is no longer in `state`, or it
    /// holds more than the list (a crash between its commit and the list's save): rebuild.
    fn lexical_missing(&self, state: &State) -> Option<(u64, Vec<(RecordId, String)>)> {
        let have = self.lexical.num_docs() as usize;
        if have > self.ids.len() {
            return None;
        }
        let mut docs = Vec::with_capacity(self.ids.len() - have);
        for id in &self.ids[have..] {
            docs.push((*id, state.entries.get(id).and_then(|e| index_text(&e.record))?));
        }
        Some((have as u64, docs))
    }

    /// Index what is missing: the records `added` since the stamped tips (`None`: compare the
    /// id sets), up to `tips`. `Ok(None)` means the cache holds something the state does not (a
    /// purged record): the caller rebuilds.
    fn catch_up(
        &mut self,
        state: &State,
        (tips, added): (&[String], Option<Vec<RecordId>>),
        embedder: Option<&mut dyn Embedder>,
        lexical: bool,
        progress: &mut dyn FnMut(usize, usize),
        // The caches' lock, when the caller holds the caches open for longer than this call (a
        // warm session): then a small catch-up commits the lexical index behind, holding the
        // lock until it lands, and leaves its vectors in memory for a while.
        lock: &mut Option<std::fs::File>,
    ) -> Result<Option<Refresh>, IndexError> {
        // A warm session folds the vector index beside its requests; anyone else in place.
        let fold = if lock.is_some() { Fold::Beside } else { Fold::Now };
        let missing_ids: Vec<RecordId> = match added {
            Some(added) => added.into_iter().filter(|id| state.entries.contains_key(id)).collect(),
            None => {
                let held: HashSet<RecordId> = self.ids.iter().copied().collect();
                if held.iter().any(|id| !state.entries.contains_key(id)) {
                    return Ok(None);
                }
                let mut m: Vec<RecordId> = state.entries.keys().filter(|id| !held.contains(id)).copied().collect();
                m.sort_by_key(|id| (state.entries[id].record.created_at, *id));
                m
            }
        };
        let missing: Vec<(RecordId, String)> =
            missing_ids.into_iter().filter_map(|id| index_text(&state.entries[&id].record).map(|t| (id, t))).collect();
        let first_key = self.ids.len() as u64;
        // A cache built without a model has no vectors at all, whatever it counted.
        let vectors_complete =
            self.stamp.model.is_some() && self.vectors.as_ref().is_some_and(|v| v.len() == self.stamp.vectors);
        self.ids.extend(missing.iter().map(|(id, _)| *id));
        if let Some(keys) = self.keys.get_mut() {
            keys.extend(missing.iter().enumerate().map(|(i, (id, _))| (*id, first_key + i as u64)));
        }
        // The lexical index's missing records: a few (a warm session's catch-up after its own
        // writes) are held in memory until there are more, then committed behind, once
        // everything else is saved; more, here and now.
        let mut behind = None;
        if lexical {
            let Some((have, docs)) = self.lexical_missing(state) else { return Ok(None) };
            if lock.is_some() && self.lexical.held() + docs.len() <= lexical::HELD_UP_TO {
                // A warm session's own few writes: searchable now, committed later.
                self.lexical
                    .hold(have, docs.into_iter().map(|(_, t)| t).collect())
                    .map_err(|e| cache_err(&self.dir, e))?;
            } else if docs.len() <= LEXICAL_BEHIND_UP_TO && lock.is_some() {
                behind = Some((have, docs.into_iter().map(|(_, t)| t).collect::<Vec<_>>()));
            } else {
                self.lexical.add(have, &docs).map_err(|e| cache_err(&self.dir, e))?;
            }
        }
        // Vectors: everything indexed but not yet embedded (new records, or all of them when the
        // model appeared after the cache was built).
        // The id list (and, unless left behind, the lexical index) is complete now: stamp it before
        // the slow part, so that a build interrupted while embedding keeps every part it saved.
        self.stamp.tips = tips.to_vec();
        self.stamp.records = self.ids.len();
        let mut embedded = 0;
        if let (Some(_), Some(embedder)) = (self.vectors.as_ref(), embedder) {
            self.stamp.model = Some(embedder.model_id().to_string());
            self.stamp.dim = embedder.dim();
            let vectors = self.vectors.as_ref().expect("checked above");
            // When every earlier record has its vectors, only the new records need them.
            let from = if vectors_complete { first_key as usize } else { 0 };
            let mut needed = if vectors_complete { self.stamp.vectors } else { 0 };
            let mut texts: Vec<(u64, String)> = Vec::new();
            for (ordinal, id) in self.ids.iter().enumerate().skip(from) {
                let Some(e) = state.entries.get(id) else { continue };
                for (p, text) in vector_texts(&e.record).into_iter().enumerate() {
                    needed += 1;
                    let key = vectors::key(ordinal as u64, p);
                    if !vectors.contains(key) {
                        texts.push((key, text));
                    }
                }
            }
            self.stamp.vectors = needed;
            // Saved part by part in key order (each part embedded shortest first): a record's
            // passages are added in order, which folding the parts relies on
            // ([`Vectors::save`] finds a record's passages by counting up from 0). Sorting the
            // whole set by length instead added a record's short later passages before its
            // long first one, and a fold in between dropped them.
            let total = texts.len();
            for part in texts.chunks(SAVE_EVERY) {
                let vectors = self.vectors.as_mut().expect("checked above");
                let before = embedded;
                embedded +=
                    vectors.add_texts(part, embedder, &mut |done, _| progress(before + done, total)).map_err(|e| {
                        match e {
                            vectors::VectorError::Embed(e) => IndexError::Embed(e),
                            other => cache_err(&self.dir, other),
                        }
                    })?;
                if embedded < total {
                    self.save(false, fold)?;
                }
            }
        }
        self.unsaved_vectors += embedded;
        // A small catch-up by the holder of the lock leaves its vectors in memory for a while.
        self.save(lock.is_some() && missing.len() <= LEXICAL_BEHIND_UP_TO, fold)?;
        if let (Some((have, texts)), Some(lock)) = (behind, lock.take()) {
            self.lexical.add_behind(have, texts, lock).map_err(|e| cache_err(&self.dir, e))?;
        }
        Ok(Some(Refresh::CaughtUp { added: missing.len(), embedded }))
    }

    fn rebuild(
        dir: &Path,
        state: &State,
        tips: &[String],
        embedder: Option<&mut dyn Embedder>,
        progress: &mut dyn FnMut(usize, usize),
        reason: String,
    ) -> Result<(Indexes, Refresh), IndexError> {
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(|e| cache_err(dir, format!("cannot remove the old cache: {e}")))?;
        }
        std::fs::create_dir_all(dir).map_err(|e| cache_err(dir, e))?;
        let lexical = Lexical::create(&dir.join("lexical")).map_err(|e| cache_err(dir, e))?;
        let vectors = match &embedder {
            Some(e) => Some(Vectors::create(dir, e.dim()).map_err(|e| cache_err(dir, e))?),
            None => None,
        };
        let mut idx = Indexes {
            dir: dir.to_path_buf(),
            stamp: Stamp {
                format: CACHE_FORMAT,
                tips: Vec::new(),
                records: 0,
                model: None,
                dim: 0,
                vectors: 0,
                ids_hash: String::new(),
            },
            ids: Vec::new(),
            lexical,
            vectors,
            unsaved_vectors: 0,
            hashed: None,
            keys: std::sync::OnceLock::new(),
        };
        let refresh = idx.catch_up(state, (tips, None), embedder, true, progress, &mut None)?;
        let (records, embedded) = match refresh {
            Some(Refresh::CaughtUp { added, embedded }) => (added, embedded),
            _ => (idx.ids.len(), 0),
        };
        Ok((idx, Refresh::Rebuilt { reason, records, embedded }))
    }

    /// Write the id list, the vectors (unless `defer` and fewer than [`VECTORS_SAVE_EVERY`] wait
    /// to be written; folded as `fold` says) and the stamp.
    fn save(&mut self, defer: bool, fold: Fold) -> Result<(), IndexError> {
        write_ids(&self.dir.join("ids"), &self.ids).map_err(|e| cache_err(&self.dir, e))?;
        if let Some(v) = &mut self.vectors {
            if !defer || self.unsaved_vectors >= VECTORS_SAVE_EVERY {
                v.save(self.ids.len() as u64, fold).map_err(|e| cache_err(&self.dir, e))?;
                self.unsaved_vectors = 0;
            }
        }
        self.stamp.ids_hash = self.stamped_ids_hash();
        let json = serde_json::to_vec_pretty(&self.stamp).map_err(|e| cache_err(&self.dir, e))?;
        // The stamp is written last and atomically: a crash before it leaves the old stamp,
        // which no longer matches the files, so the next open rebuilds.
        let tmp = self.dir.join("stamp.json.tmp");
        std::fs::write(&tmp, json).map_err(|e| cache_err(&self.dir, e))?;
        std::fs::rename(&tmp, Self::stamp_path(&self.dir)).map_err(|e| cache_err(&self.dir, e))?;
        Ok(())
    }

    /// The checksum [`Stamp::ids_hash`] holds: BLAKE3 of the ids the stamp counts, one after
    /// another, from the hasher kept for the part hashed before.
    fn stamped_ids_hash(&mut self) -> String {
        let n = self.stamp.records.min(self.ids.len());
        let (from, mut hasher) = match self.hashed.take() {
            Some((done, h)) if done <= n => (done, h),
            _ => (0, blake3::Hasher::new()),
        };
        for id in &self.ids[from..n] {
            hasher.update(&id.0);
        }
        let hash = hasher.finalize().to_hex().to_string();
        self.hashed = Some((n, hasher));
        hash
    }

    /// The vector of the first passage of each record `wanted` accepts (none without vectors).
    pub fn record_vectors(&self, wanted: &dyn Fn(RecordId) -> bool) -> Vec<(RecordId, Vec<f32>)> {
        let Some(v) = &self.vectors else { return Vec::new() };
        self.ids
            .iter()
            .enumerate()
            .filter(|(_, id)| wanted(**id))
            .filter_map(|(ordinal, id)| v.get(vectors::key(ordinal as u64, 0)).map(|vec| (*id, vec)))
            .collect()
    }

    /// Pairs of records, both accepted by `wanted`, whose first passages' vectors are at
    /// `threshold` cosine or more: each record's nearest `neighbours` are looked at, with a narrow
    /// search ([`NEAR_WIDTH`]), in parallel. Each pair comes once, (lower id, higher id), with the
    /// higher score found, sorted. Empty without vectors.
    pub fn near_pairs(
        &self,
        threshold: f32,
        neighbours: usize,
        wanted: &(dyn Fn(RecordId) -> bool + Sync),
    ) -> Result<Vec<(RecordId, RecordId, f32)>, IndexError> {
        use rayon::prelude::*;
        let Some(v) = &self.vectors else { return Ok(Vec::new()) };
        let records = self.record_vectors(wanted);
        let found: Vec<Vec<(RecordId, RecordId, f32)>> = v.with_width(NEAR_WIDTH, |_| {
            records
                .par_iter()
                .map(|(id, vec)| {
                    Ok(self
                        .search_vectors(vec, neighbours)?
                        .into_iter()
                        .filter(|(other, cos)| other != id && *cos >= threshold && wanted(*other))
                        .map(|(other, cos)| if *id < other { (*id, other, cos) } else { (other, *id, cos) })
                        .collect())
                })
                .collect::<Result<_, IndexError>>()
        })?;
        let mut pairs: HashMap<(RecordId, RecordId), f32> = HashMap::new();
        for (a, b, cos) in found.into_iter().flatten() {
            let e = pairs.entry((a, b)).or_insert(cos);
            *e = e.max(cos);
        }
        let mut out: Vec<(RecordId, RecordId, f32)> = pairs.into_iter().map(|((a, b), c)| (a, b, c)).collect();
        out.sort_by_key(|x| (x.0, x.1));
        Ok(out)
    }

    /// The record id stored under `key`.
    pub fn id_of(&self, key: u64) -> Option<RecordId> {
        self.ids.get(key as usize).copied()
    }

    /// The vector of passage `passage` of record `id` (none without vectors, or when it is not
    /// indexed).
    pub fn passage_vector(&self, id: RecordId, passage: usize) -> Option<Vec<f32>> {
        let v = self.vectors.as_ref()?;
        let ordinal = self.key_of(&id)?;
        v.get(vectors::key(ordinal, passage))
    }

    /// The key record `id` is stored under, if it is indexed.
    fn key_of(&self, id: &RecordId) -> Option<u64> {
        let keys = self.keys.get_or_init(|| self.ids.iter().enumerate().map(|(k, id)| (*id, k as u64)).collect());
        keys.get(id).copied()
    }

    /// Each of `ids`'s best passage for `query` (cosine similarity, passage number), read from
    /// the stored vectors: the exact similarity of records the vector search did not return (the
    /// lexical side's), so fusion weighs every candidate by both scores. Ids without vectors are
    /// left out.
    pub fn similarities(&self, ids: &[RecordId], query: &[f32]) -> Vec<(RecordId, f32, usize)> {
        let Some(v) = &self.vectors else { return Vec::new() };
        if ids.is_empty() {
            return Vec::new();
        }
        // In key order, each once.
        let mut wanted: Vec<(u64, RecordId)> = ids.iter().filter_map(|id| Some((self.key_of(id)?, *id))).collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut out = Vec::with_capacity(wanted.len());
        for (ordinal, id) in wanted {
            // A record's passages are numbered from 0 without gaps.
            let best = (0..passages::MAX_PASSAGES)
                .map_while(|p| v.get(vectors::key(ordinal, p)).map(|vec| (p, vec)))
                .map(|(p, vec)| (crate::embed::cosine(query, &vec), p))
                .max_by(|a, b| a.0.total_cmp(&b.0));
            if let Some((cos, p)) = best {
                out.push((id, cos, p));
            }
        }
        out
    }

    /// [`lexical::Lexical::doc_freq`] of this index.
    pub fn doc_freq(&self, word: &str) -> Result<(u64, u64), IndexError> {
        self.lexical.doc_freq(word).map_err(|e| cache_err(&self.dir, e))
    }

    /// [`Indexes::search_lexical`] with feedback words ([`lexical::Lexical::search_expanded`]).
    pub fn search_lexical_expanded(
        &self,
        query: &str,
        extra: &[(String, f32)],
        limit: usize,
    ) -> Result<Vec<(RecordId, f32)>, IndexError> {
        let hits = self.lexical.search_expanded(query, extra, limit).map_err(|e| cache_err(&self.dir, e))?;
        Ok(hits.into_iter().filter_map(|(k, s)| self.id_of(k).map(|id| (id, s))).collect())
    }

    /// Lexical candidates: (record id, BM25 score), best first.
    pub fn search_lexical(&self, query: &str, limit: usize) -> Result<Vec<(RecordId, f32)>, IndexError> {
        let hits = self.lexical.search(query, limit).map_err(|e| cache_err(&self.dir, e))?;
        Ok(hits.into_iter().filter_map(|(k, s)| self.id_of(k).map(|id| (id, s))).collect())
    }

    /// Vector candidates: (record id, cosine similarity of its best passage), best first; empty
    /// without vectors.
    pub fn search_vectors(&self, query: &[f32], limit: usize) -> Result<Vec<(RecordId, f32)>, IndexError> {
        Ok(self.passages(query, limit, false)?.into_iter().map(|(id, s, _)| (id, s)).collect())
    }

    /// Whether recall's vector search goes through the graph (more than
    /// [`vectors::EXACT_UP_TO`] vectors) rather than an exact scan.
    pub fn searches_graph(&self) -> bool {
        self.vectors.as_ref().is_some_and(|v| v.len() > vectors::EXACT_UP_TO)
    }

    /// Recall's vector candidates: [`Indexes::search_vectors`] with the number of the passage
    /// that matched best, exact in a small index ([`vectors::Vectors::search_best`]).
    pub fn search_passages(&self, query: &[f32], limit: usize) -> Result<Vec<(RecordId, f32, usize)>, IndexError> {
        self.passages(query, limit, true)
    }

    fn passages(&self, query: &[f32], limit: usize, best: bool) -> Result<Vec<(RecordId, f32, usize)>, IndexError> {
        let Some(v) = &self.vectors else { return Ok(Vec::new()) };
        // Several passages of one record may come back: ask for more, keep each record's best.
        let want = limit.saturating_mul(2).max(limit + 16);
        let hits = if best { v.search_best(query, want) } else { v.search(query, want) };
        let hits = hits.map_err(|e| cache_err(&self.dir, e))?;
        let mut seen = HashSet::new();
        let mut out = Vec::with_capacity(limit);
        for (key, s) in hits {
            let (ordinal, passage) = vectors::split_key(key);
            if let Some(id) = self.id_of(ordinal) {
                if seen.insert(id) {
                    out.push((id, s, passage));
                    if out.len() == limit {
                        break;
                    }
                }
            }
        }
        Ok(out)
    }
}

fn read_ids(path: &Path) -> std::io::Result<Vec<RecordId>> {
    let bytes = std::fs::read(path)?;
    if bytes.len() % 32 != 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "truncated"));
    }
    Ok(bytes
        .chunks(32)
        .map(|c| {
            let mut a = [0u8; 32];
            a.copy_from_slice(c);
            RecordId(a)
        })
        .collect())
}

fn write_ids(path: &Path, ids: &[RecordId]) -> std::io::Result<()> {
    // Ids are only ever appended: write just the new ones when the file holds a prefix.
    if let Ok(meta) = std::fs::metadata(path) {
        let held = meta.len() as usize / 32;
        if meta.len() % 32 == 0 && held <= ids.len() && held > 0 {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(path)?;
            let mut bytes = Vec::with_capacity((ids.len() - held) * 32);
            for id in &ids[held..] {
                bytes.extend_from_slice(&id.0);
            }
            return f.write_all(&bytes);
        }
    }
    let mut bytes = Vec::with_capacity(ids.len() * 32);
    for id in ids {
        bytes.extend_from_slice(&id.0);
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(tmp, path)
}

#[cfg(test)]
mod tests;
