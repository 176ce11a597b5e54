//! The vector index: usearch, cosine metric, f16 storage (i8 lost recall in a measurement here).
//!
//! Two files: `vectors.usearch`, the main index, opened as a read-only memory map (so opening
//! 100k vectors costs a mapping, not a 100 MB read), and `vectors-new.usearch`, a small index of
//! vectors added since, loaded and rewritten on each catch-up. Searches query both and merge. When
//! the new part outgrows max(1024, main / 8) it is folded into a rebuilt main index (its graph
//! built on several threads), so one new record never rewrites the whole index. A long-lived
//! session builds that index on a thread of its own while it goes on answering, and swaps it in
//! once it is built ([`Fold::Beside`]); a process that may not live long folds in place.
//! Recall's exact scan of a small index reads usearch's parts, or, in a session that lays the
//! vectors out between requests ([`Vectors::prepare_scan`]), a copy of them side by side
//! ([`super::flat::Flat`]).

use super::flat::Flat;
use crate::embed::{EmbedError, Embedder};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Errors from the vector index.
#[derive(Debug, thiserror::Error)]
pub enum VectorError {
    #[error("usearch: {0}")]
    Usearch(String),
    #[error(transparent)]
    Embed(EmbedError),
}

/// usearch's f16 values as their bit patterns.
fn f16_bits(values: &[usearch::f16]) -> Vec<u16> {
    usearch::f16::to_i16s(values).iter().map(|&b| b as u16).collect()
}

/// A buffer for one vector read as usearch stores it (f16).
fn f16_buffer(dim: usize) -> Vec<usearch::f16> {
    usearch::f16::from_i16s(&vec![0; dim]).to_vec()
}

fn us(e: impl std::fmt::Display) -> VectorError {
    VectorError::Usearch(e.to_string())
}

fn options(dim: usize) -> usearch::IndexOptions {
    usearch::IndexOptions {
        dimensions: dim,
        metric: usearch::MetricKind::Cos,
        quantization: usearch::ScalarKind::F16,
        // Wider than the default at query time: measured recall@10 against exact search at 100k
        // records was 0.875 with the default.
        expansion_search: EXPANSION_SEARCH,
        ..Default::default()
    }
}

/// Candidate list size during search.
const EXPANSION_SEARCH: usize = 256;

/// Threads that build the graph of a fold at most (see [`Vectors::save`]).
const FOLD_THREADS: usize = 4;

/// Up to this many vectors, recall's search is exact ([`Vectors::search_best`]).
pub const EXACT_UP_TO: usize = 16_384;

/// Estimated tokens handed to the embedder per call (it cuts each call into model batches by its
/// own token budget): enough for the embedder to batch well, small enough for a progress bar to
/// move every few seconds on long texts.
const CALL_TOKENS: usize = 16_384;

/// A text's length in tokens, estimated from its bytes (about four per token in English prose
/// and code), cut at the model's window.
fn estimated_tokens(text: &str) -> usize {
    (text.len() / 4).clamp(1, crate::embed::MAX_TOKENS)
}

/// The key of a record's passage: its ordinal in the upper bits, the passage number in the low
/// eight (a record has at most 255 passages, see [`super::passages`]).
pub fn key(ordinal: u64, passage: usize) -> u64 {
    (ordinal << 8) | (passage as u64 & 0xff)
}

/// (ordinal, passage) of a key.
pub fn split_key(key: u64) -> (u64, usize) {
    (key >> 8, (key & 0xff) as usize)
}

/// When a save that finds the new part too large folds it into the main index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fold {
    /// Here and now: the caller may not live long enough for anything else (a command in its
    /// own process, a first open).
    Now,
    /// On a thread of its own while the caller goes on; once built, the next save swaps the new
    /// main index in (a warm session, which also asks between commands through
    /// `Indexes::land_fold`: building the graph took 0.6 to 2 s at 10k vectors, and every call
    /// that arrived meanwhile waited for it).
    Beside,
    /// Not in this save: the new part is written as it is and the next save folds (a session
    /// letting its caches go).
    Later,
}

/// A fold building on a thread of its own ([`Fold::Beside`]).
struct Folding {
    /// The main index rebuilt from both parts as they were when the fold began.
    built: std::thread::JoinHandle<Result<usearch::Index, VectorError>>,
    /// Set when the fold is no longer wanted (the index is let go): the thread stops within a
    /// few hundred insertions.
    cancel: Arc<AtomicBool>,
}

/// Write `index` to `path` whole or not at all (a temporary file, then a rename).
fn write(index: &usearch::Index, path: &Path) -> Result<(), VectorError> {
    let tmp = path.with_extension("tmp");
    index.save(&tmp.to_string_lossy()).map_err(us)?;
    std::fs::rename(&tmp, path).map_err(us)
}

/// Run the calling thread at a lower priority than the process's others (Linux gives each
/// thread its own nice value): a fold beside shares the cores with the requests it must not
/// slow.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority on this thread's own id; a failure leaves the priority as it was.
    unsafe {
        let _ = libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 10);
    }
}

/// A usearch index of unit vectors keyed by [`key`], in a main part and a new part.
pub struct Vectors {
    dir: PathBuf,
    main: usearch::Index,
    new: usearch::Index,
    dim: usize,
    folding: Option<Folding>,
    /// Both parts' vectors side by side for recall's exact scan ([`Vectors::prepare_scan`]).
    flat: Option<Flat>,
    /// The size at which making `flat` last failed (its keys did not add up): not tried again
    /// until the index changes.
    flat_failed_at: Option<usize>,
}

impl Drop for Vectors {
    fn drop(&mut self) {
        self.cancel_fold();
    }
}

/// How often a fold's thread looks at its cancel flag, in insertions.
const CANCEL_EVERY: usize = 256;

/// The main index rebuilt from `parts` (main, new): every record's passages below `ordinals`, in
/// key order, inserted from `threads` threads, each in a context of its own (usearch inserts
/// concurrently). Building the graph is the whole cost of a fold (2.6 to 3.9 s for 13k vectors on
/// one core).
fn rebuilt(
    parts: [&usearch::Index; 2],
    ordinals: u64,
    dim: usize,
    threads: usize,
    cancel: &AtomicBool,
) -> Result<usearch::Index, VectorError> {
    // The keys of every vector, each with the part that holds it, in key order.
    let mut keys: Vec<(u64, &usearch::Index)> = Vec::with_capacity(parts[0].size() + parts[1].size());
    for ordinal in 0..ordinals {
        // A record's passages are numbered from 0 without gaps.
        for passage in 0..=0xff {
            let key = key(ordinal, passage);
            let Some(part) = parts.into_iter().find(|p| p.contains(key)) else { break };
            keys.push((key, part));
        }
    }
    let merged = usearch::Index::new(&options(dim)).map_err(us)?;
    merged.reserve_capacity_and_threads(keys.len(), threads).map_err(us)?;
    let share = keys.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = keys
            .chunks(share)
            .map(|chunk| {
                let merged = &merged;
                scope.spawn(move || -> Result<(), VectorError> {
                    let mut buf = vec![0f32; dim];
                    for (i, &(key, part)) in chunk.iter().enumerate() {
                        if i % CANCEL_EVERY == 0 && cancel.load(Ordering::Relaxed) {
                            return Err(VectorError::Usearch("the fold was cancelled".into()));
                        }
                        if part.get(key, &mut buf).map_err(us)? > 0 {
                            merged.add(key, &buf).map_err(us)?;
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| {
            w.join().map_err(|_| VectorError::Usearch("a thread folding the vector index stopped".into()))?
        })
    })?;
    Ok(merged)
}

impl Vectors {
    fn main_path(dir: &Path) -> PathBuf {
        dir.join("vectors.usearch")
    }

    fn new_path(dir: &Path) -> PathBuf {
        dir.join("vectors-new.usearch")
    }

    /// An empty index that will live in `dir`.
    pub fn create(dir: &Path, dim: usize) -> Result<Vectors, VectorError> {
        Ok(Vectors {
            dir: dir.to_path_buf(),
            main: usearch::Index::new(&options(dim)).map_err(us)?,
            new: usearch::Index::new(&options(dim)).map_err(us)?,
            dim,
            folding: None,
            flat: None,
            flat_failed_at: None,
        })
    }

    /// Lay every vector out for recall's exact scan ([`Flat`]), when this index is small
    /// enough to be scanned and they are not laid out yet: for a caller that answers one
    /// request after another, between them (a command in its own process scans once, through
    /// usearch, and never pays for this). `ordinals` bounds the records' ordinals, as in
    /// [`Vectors::save`]. Every vector added later is laid out as it is added; a layout whose
    /// count no longer matches the index's is not used.
    pub fn prepare_scan(&mut self, ordinals: u64) -> Result<(), VectorError> {
        let len = self.len();
        if len > EXACT_UP_TO || len == 0 {
            self.flat = None;
            return Ok(());
        }
        if self.flat.as_ref().is_some_and(|f| f.len() == len) || self.flat_failed_at == Some(len) {
            return Ok(());
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut flat = Flat::new(self.dim, threads);
        flat.reserve(len);
        let mut buf = f16_buffer(self.dim);
        let mut held = 0;
        for ordinal in 0..ordinals {
            // A record's passages are numbered from 0 without gaps.
            for passage in 0..=0xff {
                let key = key(ordinal, passage);
                let (in_main, in_new) = (self.main.contains(key), self.new.contains(key));
                if !in_main && !in_new {
                    break;
                }
                held += usize::from(in_main) + usize::from(in_new);
                let part = if in_new { &self.new } else { &self.main };
                if part.get(key, &mut buf[..]).map_err(us)? == 0 {
                    return Err(VectorError::Usearch(format!("the vector of key {key} could not be read")));
                }
                flat.push(key, &f16_bits(&buf));
            }
        }
        // Every vector of both parts once, or the scan would miss some: usearch's scan stays.
        if held == len && flat.len() == len {
            self.flat = Some(flat);
            self.flat_failed_at = None;
        } else {
            self.flat = None;
            self.flat_failed_at = Some(len);
        }
        Ok(())
    }

    /// Whether recall's exact scan reads the vectors laid out by [`Vectors::prepare_scan`].
    pub fn scans_laid_out(&self) -> bool {
        self.flat.as_ref().is_some_and(|f| f.len() == self.len())
    }

    /// Reopen the files after a fold, keeping the vectors laid out for the scan: a fold moves
    /// vectors between the parts, never adds or drops one.
    fn reopen(&mut self) -> Result<(), VectorError> {
        let flat = self.flat.take();
        *self = Vectors::open(&self.dir, self.dim)?;
        self.flat = flat.filter(|f| f.len() == self.len());
        Ok(())
    }

    /// Open the index files in `dir` (missing files are empty parts).
    pub fn open(dir: &Path, dim: usize) -> Result<Vectors, VectorError> {
        let v = Vectors::create(dir, dim)?;
        for (index, path, view) in [(&v.main, Self::main_path(dir), true), (&v.new, Self::new_path(dir), false)] {
            if path.exists() {
                let p = path.to_string_lossy();
                if view {
                    index.view(&p).map_err(us)?;
                } else {
                    index.load(&p).map_err(us)?;
                }
                // A loaded or viewed index takes its settings from the file: set the search width again.
                index.change_expansion_search(EXPANSION_SEARCH);
                if index.dimensions() != dim {
                    return Err(VectorError::Usearch(format!(
                        "{} has {} dimensions, expected {dim}",
                        path.display(),
                        index.dimensions()
                    )));
                }
            }
        }
        Ok(v)
    }

    /// The vector stored under `key` (as stored: f16, so within about 0.001 of what was added).
    pub fn get(&self, key: u64) -> Option<Vec<f32>> {
        let index = if self.new.contains(key) { &self.new } else { &self.main };
        let mut v = vec![0f32; self.dim];
        match index.get(key, &mut v[..]) {
            Ok(n) if n >= 1 => Some(v),
            _ => None,
        }
    }

    pub fn contains(&self, key: u64) -> bool {
        self.main.contains(key) || self.new.contains(key)
    }

    pub fn len(&self) -> usize {
        self.main.size() + self.new.size()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Embed and add `texts` under their keys; returns how many were added. Texts are taken
    /// shortest first, so each call to the embedder holds texts of similar length (little
    /// padding), in calls of about [`CALL_TOKENS`] estimated tokens.
    pub fn add_texts(
        &mut self,
        texts: &[(u64, String)],
        embedder: &mut dyn Embedder,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<usize, VectorError> {
        if texts.is_empty() {
            return Ok(0);
        }
        // usearch needs capacity reserved before adding.
        self.new.reserve(self.new.size() + texts.len()).map_err(us)?;
        let mut order: Vec<&(u64, String)> = texts.iter().collect();
        order.sort_by_key(|(key, t)| (t.len(), *key));
        let mut chunks: Vec<Vec<&(u64, String)>> = vec![Vec::new()];
        let mut tokens = 0;
        for t in order {
            if tokens >= CALL_TOKENS {
                chunks.push(Vec::new());
                tokens = 0;
            }
            tokens += estimated_tokens(&t.1);
            chunks.last_mut().expect("one chunk at least").push(t);
        }
        let mut done = 0;
        for chunk in chunks {
            let batch: Vec<String> = chunk.iter().map(|(_, t)| t.clone()).collect();
            let vectors = embedder.embed(&batch).map_err(VectorError::Embed)?;
            for ((key, _), v) in chunk.iter().zip(vectors) {
                if v.len() != self.dim {
                    return Err(VectorError::Usearch(format!(
                        "got a {}-dimensional vector, expected {}",
                        v.len(),
                        self.dim
                    )));
                }
                // A duplicate key is an error in usearch: remove first (a retried catch-up).
                let again = self.new.contains(*key) || self.main.contains(*key);
                if self.new.contains(*key) {
                    self.new.remove(*key).map_err(us)?;
                }
                self.new.add(*key, &v).map_err(us)?;
                // The layout for the scan grows with the index: a vector as stored, or, when a
                // key came again, it is laid out afresh by the next `prepare_scan`.
                if again {
                    self.flat = None;
                } else if let Some(flat) = self.flat.as_mut() {
                    let mut stored = f16_buffer(self.dim);
                    if self.new.get(*key, &mut stored[..]).map_err(us)? == 0 {
                        self.flat = None;
                    } else {
                        flat.push(*key, &f16_bits(&stored));
                    }
                }
            }
            done += chunk.len();
            progress(done, texts.len());
        }
        Ok(done)
    }

    /// How many vectors the main part and the new part hold.
    #[cfg(test)]
    pub(crate) fn parts(&self) -> (usize, usize) {
        (self.main.size(), self.new.size())
    }

    /// Whether a fold built beside has finished building (the next save swaps it in).
    pub fn fold_built(&self) -> bool {
        self.folding.as_ref().is_some_and(|f| f.built.is_finished())
    }

    /// Whether a fold is building on a thread of its own ([`Fold::Beside`]).
    pub fn folding(&self) -> bool {
        self.folding.is_some()
    }

    /// Persist: the new part alone while it is small, else fold it into a rebuilt main index,
    /// as `fold` says. A fold that finished building on its thread is swapped in first, whatever
    /// `fold` says. `ordinals` bounds the records' ordinals (usearch cannot list its keys), and
    /// a record's passages are found by counting up from 0 to the first missing one: callers add
    /// a record's passages in order, never a later one before an earlier one.
    ///
    /// The caller holds the caches' lock, and the files are this index's own (a session whose
    /// caches another process wrote since lets them go, and with them a fold in progress): so
    /// the main file a fold began from is still the one on disk when it is swapped in.
    pub fn save(&mut self, ordinals: u64, fold: Fold) -> Result<(), VectorError> {
        let mut fold = fold;
        if let Some(f) = self.folding.take_if(|f| f.built.is_finished()) {
            match f.built.join() {
                Ok(Ok(built)) => return self.swap_in(built, ordinals),
                // A fold that failed on its thread is done here, where its error is the save's.
                _ => fold = Fold::Now,
            }
        }
        let (main_path, new_path) = (Self::main_path(&self.dir), Self::new_path(&self.dir));
        if self.new.size() == 0 {
            return Ok(());
        }
        let due = self.new.size() > (self.main.size() / 8).max(1024);
        if self.main.size() == 0 {
            // First build: the new part becomes the main index as it is.
            write(&self.new, &main_path)?;
        } else if due && fold == Fold::Now {
            self.cancel_fold();
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, FOLD_THREADS);
            let merged = rebuilt([&self.main, &self.new], ordinals, self.dim, threads, &AtomicBool::new(false))?;
            write(&merged, &main_path)?;
        } else {
            if due && fold == Fold::Beside && self.folding.is_none() {
                self.fold_beside(ordinals)?;
            }
            return write(&self.new, &new_path);
        }
        // The new part is now in the main file: start a fresh new part, and map the main file.
        let _ = std::fs::remove_file(&new_path);
        self.reopen()
    }

    /// Stop a fold building beside, if any, and wait for its thread.
    fn cancel_fold(&mut self) {
        if let Some(f) = self.folding.take() {
            f.cancel.store(true, Ordering::Relaxed);
            let _ = f.built.join();
        }
    }

    /// Start building the folded main index on a thread of its own, from a copy of the new part
    /// (which the caller goes on adding to) and a second mapping of the main file (which nobody
    /// changes until the fold is swapped in). The thread leaves a core to the caller's requests
    /// and runs at a lower priority than they do: nobody waits for it.
    fn fold_beside(&mut self, ordinals: u64) -> Result<(), VectorError> {
        let main = usearch::Index::new(&options(self.dim)).map_err(us)?;
        main.view(&Self::main_path(&self.dir).to_string_lossy()).map_err(us)?;
        let new = usearch::Index::new(&options(self.dim)).map_err(us)?;
        let mut bytes = vec![0u8; self.new.serialized_length()];
        self.new.save_to_buffer(&mut bytes).map_err(us)?;
        new.load_from_buffer(&bytes).map_err(us)?;
        drop(bytes);
        let cancel = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&cancel);
        let dim = self.dim;
        let threads =
            std::thread::available_parallelism().map_or(1, |n| n.get()).saturating_sub(1).clamp(1, FOLD_THREADS);
        let built = std::thread::Builder::new()
            .name("git-neo-fold".into())
            .spawn(move || {
                lower_priority();
                rebuilt([&main, &new], ordinals, dim, threads, &stop)
            })
            .map_err(us)?;
        self.folding = Some(Folding { built, cancel });
        Ok(())
    }

    /// Swap a fold built beside in: what the new part took in since the fold began (the records
    /// of later writes) becomes the next new part, the built index the main file.
    fn swap_in(&mut self, built: usearch::Index, ordinals: u64) -> Result<(), VectorError> {
        let later = usearch::Index::new(&options(self.dim)).map_err(us)?;
        let mut carried = Vec::new();
        for ordinal in 0..ordinals {
            for passage in 0..=0xff {
                let key = key(ordinal, passage);
                if built.contains(key) {
                    continue;
                }
                if !self.new.contains(key) {
                    break;
                }
                carried.push(key);
            }
        }
        later.reserve(carried.len()).map_err(us)?;
        let mut buf = vec![0f32; self.dim];
        for key in carried {
            if self.new.get(key, &mut buf).map_err(us)? > 0 {
                later.add(key, &buf).map_err(us)?;
            }
        }
        let (main_path, new_path) = (Self::main_path(&self.dir), Self::new_path(&self.dir));
        // The later part first: until the main file is replaced, the new part on disk still
        // holds everything the old main file lacks.
        if later.size() > 0 {
            let tmp = new_path.with_extension("later");
            later.save(&tmp.to_string_lossy()).map_err(us)?;
            write(&built, &main_path)?;
            std::fs::rename(&tmp, &new_path).map_err(us)?;
        } else {
            write(&built, &main_path)?;
            let _ = std::fs::remove_file(&new_path);
        }
        self.reopen()
    }

    fn merged(parts: [Vec<(u64, f32)>; 2], limit: usize) -> Vec<(u64, f32)> {
        let mut all: Vec<(u64, f32)> = parts.into_iter().flatten().collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        all.truncate(limit);
        all
    }

    fn search_part(
        index: &usearch::Index,
        query: &[f32],
        limit: usize,
        exact: bool,
    ) -> Result<Vec<(u64, f32)>, VectorError> {
        if index.size() == 0 {
            return Ok(Vec::new());
        }
        let m = if exact { index.exact_search(query, limit) } else { index.search(query, limit) }.map_err(us)?;
        Ok(m.keys.into_iter().zip(m.distances).map(|(k, d)| (k, 1.0 - d)).collect())
    }

    /// [`Vectors::search`], exact (a scan of every vector) while the index holds at most
    /// [`EXACT_UP_TO`] vectors: recall's one question per query. A scan of 16k vectors costs
    /// about as much as the graph search's bookkeeping, and the graph search misses some true
    /// neighbours: on SciFact's 13k passages, two graphs built from the same vectors ranked
    /// apart by 0.01 to 0.02 nDCG@10 (docs/recall.md).
    pub fn search_best(&self, query: &[f32], limit: usize) -> Result<Vec<(u64, f32)>, VectorError> {
        if let Some(flat) = self.flat.as_ref().filter(|f| f.len() == self.len() && f.len() <= EXACT_UP_TO) {
            return Ok(flat.search(query, limit.max(1)));
        }
        if self.len() <= EXACT_UP_TO {
            let found = self.exact_search(query, limit)?;
            self.scored_as_laid_out(query, found)
        } else {
            self.search(query, limit)
        }
    }

    /// `hits` of usearch's exact scan, scored again as the laid-out scan scores (`flat::cosine`)
    /// and ranked by that score: an answer is the same whether the session asking had its
    /// vectors laid out or not (usearch rounds the query to f16 and has its own kernels, which
    /// put its scores up to about 1e-4 from these).
    fn scored_as_laid_out(&self, query: &[f32], hits: Vec<(u64, f32)>) -> Result<Vec<(u64, f32)>, VectorError> {
        let qn = super::flat::query_norm(query);
        let mut buf = f16_buffer(self.dim);
        let mut out = Vec::with_capacity(hits.len());
        for (key, _) in hits {
            let part = if self.new.contains(key) { &self.new } else { &self.main };
            if part.get(key, &mut buf[..]).map_err(us)? > 0 {
                let row = f16_bits(&buf);
                out.push((key, super::flat::cosine(query, qn, &row, super::flat::norm(&row))));
            }
        }
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(out)
    }

    /// (key, cosine similarity), best first.
    pub fn search(&self, query: &[f32], limit: usize) -> Result<Vec<(u64, f32)>, VectorError> {
        let limit = limit.max(1);
        Ok(Self::merged(
            [Self::search_part(&self.main, query, limit, false)?, Self::search_part(&self.new, query, limit, false)?],
            limit,
        ))
    }

    /// Run `f` with the search width set to `width`, then set it back. Scans for near-duplicates
    /// ask one question per record and want only very close answers, which a narrow search
    /// finds: the recall-time width made such a scan of 10k records take seconds. (The width is
    /// the index's setting: callers hold the index exclusively, as a session does.)
    pub fn with_width<T>(&self, width: usize, f: impl FnOnce(&Self) -> T) -> T {
        for part in [&self.main, &self.new] {
            part.change_expansion_search(width);
        }
        let out = f(self);
        for part in [&self.main, &self.new] {
            part.change_expansion_search(EXPANSION_SEARCH);
        }
        out
    }

    /// Exact (brute-force) search, for measuring the approximate index's recall.
    pub fn exact_search(&self, query: &[f32], limit: usize) -> Result<Vec<(u64, f32)>, VectorError> {
        let limit = limit.max(1);
        Ok(Self::merged(
            [Self::search_part(&self.main, query, limit, true)?, Self::search_part(&self.new, query, limit, true)?],
            limit,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::HashEmbedder;

    fn texts(range: std::ops::Range<u64>) -> Vec<(u64, String)> {
        range.map(|k| (key(k, 0), format!("record number {k} about topic {}", k % 17))).collect()
    }

    #[test]
    fn new_part_is_kept_apart_then_folded_into_main() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut e = HashEmbedder::new(64);
        let mut v = Vectors::create(dir.path(), 64).expect("create");
        v.add_texts(&texts(0..10), &mut e, &mut |_, _| {}).expect("add");
        v.save(10, Fold::Now).expect("save");
        assert!(dir.path().join("vectors.usearch").exists() && !dir.path().join("vectors-new.usearch").exists());

        // A small addition lands in the new part only.
        let mut v = Vectors::open(dir.path(), 64).expect("open");
        v.add_texts(&texts(10..11), &mut e, &mut |_, _| {}).expect("add");
        v.save(11, Fold::Now).expect("save");
        assert!(dir.path().join("vectors-new.usearch").exists());
        let v = Vectors::open(dir.path(), 64).expect("open");
        assert_eq!(v.len(), 11);
        let q = e.embed(&["record number 10 about topic 10".to_string()]).expect("embed").remove(0);
        assert_eq!(v.search(&q, 1).expect("search")[0].0, key(10, 0), "search covers the new part");

        // A large addition folds everything into the main index.
        let mut v = Vectors::open(dir.path(), 64).expect("open");
        v.add_texts(&texts(11..1100), &mut e, &mut |_, _| {}).expect("add");
        v.save(1100, Fold::Now).expect("save");
        assert!(!dir.path().join("vectors-new.usearch").exists(), "folded");
        let v = Vectors::open(dir.path(), 64).expect("open");
        assert_eq!(v.len(), 1100);
        for k in [0u64, 10, 500, 1099] {
            let q = e.embed(&[format!("record number {k} about topic {}", k % 17)]).expect("embed").remove(0);
            assert_eq!(v.exact_search(&q, 1).expect("search")[0].0, key(k, 0));
            // The graph, built on several threads, finds them as well.
            assert_eq!(v.search(&q, 1).expect("search")[0].0, key(k, 0));
        }
    }

    /// The query for record `k` of [`texts`].
    fn query(e: &mut HashEmbedder, k: u64) -> Vec<f32> {
        e.embed(&[format!("record number {k} about topic {}", k % 17)]).expect("embed").remove(0)
    }

    /// `search_best` against usearch's own exact scan: the same keys in the same order, scores
    /// within f16 rounding (usearch rounds the query to f16 too).
    fn same_as_usearch(v: &Vectors, q: &[f32], limit: usize) {
        let laid_out = v.search_best(q, limit).expect("search");
        let usearch = v.exact_search(q, limit).expect("exact");
        assert_eq!(laid_out.len(), usearch.len());
        for (a, b) in laid_out.iter().zip(&usearch) {
            assert!((a.1 - b.1).abs() < 2e-3, "{a:?} against {b:?}");
        }
        // Ranks may only swap between scores closer than the rounding.
        let keys = |r: &[(u64, f32)]| r.iter().map(|x| x.0).collect::<std::collections::BTreeSet<_>>();
        let (a, b) = (keys(&laid_out[..limit / 2]), keys(&usearch));
        assert!(a.is_subset(&b), "the laid-out scan's top half is usearch's too");
    }

    #[test]
    fn a_laid_out_scan_finds_what_usearchs_scan_finds_and_follows_the_index() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut e = HashEmbedder::new(64);
        let mut v = Vectors::create(dir.path(), 64).expect("create");
        // Records with several passages, across both parts.
        let many = |range: std::ops::Range<u64>| -> Vec<(u64, String)> {
            range
                .flat_map(|k| (0..3).map(move |p| (key(k, p), format!("record {k} passage {p} on topic {}", k % 13))))
                .collect()
        };
        v.add_texts(&many(0..600), &mut e, &mut |_, _| {}).expect("add");
        v.save(600, Fold::Now).expect("save");
        let mut v = Vectors::open(dir.path(), 64).expect("open");
        v.add_texts(&many(600..700), &mut e, &mut |_, _| {}).expect("add");
        assert!(!v.scans_laid_out(), "nothing is laid out until asked");
        let probes = [0u64, 311, 599, 600, 699];
        let before: Vec<Vec<(u64, f32)>> =
            probes.iter().map(|&k| v.search_best(&query(&mut e, k), 20).expect("search")).collect();
        v.prepare_scan(700).expect("lay out");
        assert!(v.scans_laid_out());
        for (&k, before) in probes.iter().zip(&before) {
            let q = query(&mut e, k);
            same_as_usearch(&v, &q, 20);
            // Laid out or not, the same answer to the last bit (a session's first recall is not
            // laid out yet, its second is; a command in its own process never is).
            assert_eq!(&v.search_best(&q, 20).expect("search"), before, "record {k}");
        }
        // A record added later is laid out as it is added, and found.
        v.add_texts(&[(key(700, 0), "a record nobody wrote before, about ferrets".into())], &mut e, &mut |_, _| {})
            .expect("add");
        assert!(v.scans_laid_out(), "grown with the index");
        let q = e.embed(&["a record nobody wrote before, about ferrets".to_string()]).expect("embed").remove(0);
        assert_eq!(v.search_best(&q, 1).expect("search")[0].0, key(700, 0));
        same_as_usearch(&v, &q, 20);
        // A fold moves vectors between the parts: the layout stays, and still agrees.
        v.add_texts(&many(701..1200), &mut e, &mut |_, _| {}).expect("add");
        v.save(1200, Fold::Now).expect("fold");
        assert_eq!(v.parts().1, 0, "folded");
        assert!(v.scans_laid_out(), "kept across the fold");
        for k in [5u64, 650, 1100] {
            same_as_usearch(&v, &query(&mut e, k), 20);
        }
        // A key that comes again (a retried catch-up) lets the layout go; usearch scans meanwhile.
        v.add_texts(&[(key(5, 0), "record 5 written again".into())], &mut e, &mut |_, _| {}).expect("add");
        assert!(!v.scans_laid_out());
        same_as_usearch(&v, &query(&mut e, 9), 20);
    }

    #[test]
    fn a_layout_whose_keys_do_not_add_up_is_not_used() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut e = HashEmbedder::new(64);
        let mut v = Vectors::create(dir.path(), 64).expect("create");
        // Record 3's passages start at 1: the layout, counting up from 0, would miss it.
        let mut texts = texts(0..10);
        texts.push((key(3, 1), "the second passage of record 3 only".into()));
        texts.retain(|(k, _)| *k != key(3, 0));
        v.add_texts(&texts, &mut e, &mut |_, _| {}).expect("add");
        v.prepare_scan(10).expect("lay out");
        assert!(!v.scans_laid_out(), "usearch's scan stays");
        let q = e.embed(&["the second passage of record 3 only".to_string()]).expect("embed").remove(0);
        assert_eq!(v.search_best(&q, 1).expect("search")[0].0, key(3, 1), "and finds it");
        // Past the exact scan's size nothing is laid out at all.
        let mut big = Vectors::create(dir.path(), 8).expect("create");
        let mut e8 = HashEmbedder::new(8);
        let n = EXACT_UP_TO as u64 + 1;
        big.add_texts(&(0..n).map(|k| (key(k, 0), format!("r{k}"))).collect::<Vec<_>>(), &mut e8, &mut |_, _| {})
            .expect("add");
        big.prepare_scan(n).expect("lay out");
        assert!(!big.scans_laid_out());
    }

    fn finds(v: &Vectors, e: &mut HashEmbedder, k: u64) -> bool {
        let q = e.embed(&[format!("record number {k} about topic {}", k % 17)]).expect("embed").remove(0);
        v.exact_search(&q, 1).expect("exact")[0].0 == key(k, 0) && v.search(&q, 1).expect("graph")[0].0 == key(k, 0)
    }

    /// An index in `dir` of 10 records in its main part and `10..n` in its new part, whose save
    /// (the new part too large) started a fold beside.
    fn folding_beside(dir: &Path, e: &mut HashEmbedder, n: u64) -> Vectors {
        let mut v = Vectors::create(dir, 64).expect("create");
        v.add_texts(&texts(0..10), e, &mut |_, _| {}).expect("add");
        v.save(10, Fold::Now).expect("save");
        v.add_texts(&texts(10..n), e, &mut |_, _| {}).expect("add");
        v.save(n, Fold::Beside).expect("save");
        assert!(v.folding(), "the fold runs beside");
        v
    }

    #[test]
    fn a_fold_beside_builds_while_the_part_grows_then_swaps_in_what_came_later() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut e = HashEmbedder::new(64);
        // The save that finds the new part too large starts the fold and writes the part as it is.
        let mut v = folding_beside(dir.path(), &mut e, 1100);
        assert_eq!(Vectors::open(dir.path(), 64).expect("open").new.size(), 1090, "the files hold the unfolded parts");
        // Records keep arriving, and are found, while it builds.
        v.add_texts(&texts(1100..1130), &mut e, &mut |_, _| {}).expect("add");
        v.save(1130, Fold::Beside).expect("save");
        assert!(finds(&v, &mut e, 1120) && finds(&v, &mut e, 5));
        let waited = std::time::Instant::now();
        while !v.fold_built() {
            assert!(waited.elapsed() < std::time::Duration::from_secs(60), "the fold never finished");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        v.add_texts(&texts(1130..1140), &mut e, &mut |_, _| {}).expect("add");
        // The next save swaps it in: the main part holds what the fold began with, the new part
        // what came after.
        v.save(1140, Fold::Beside).expect("save");
        assert!(!v.folding());
        assert_eq!((v.main.size(), v.new.size()), (1100, 40));
        let v = Vectors::open(dir.path(), 64).expect("open");
        assert_eq!((v.main.size(), v.new.size()), (1100, 40), "as written");
        for k in [0, 9, 10, 600, 1099, 1100, 1129, 1139] {
            assert!(finds(&v, &mut e, k), "record {k} is found after the swap");
        }
    }

    #[test]
    fn a_fold_beside_is_let_go_with_its_index() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut e = HashEmbedder::new(64);
        let v = folding_beside(dir.path(), &mut e, 3000);
        // Let go at once: the thread stops, nothing is swapped in, the files stand as saved.
        drop(v);
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into())
            .collect();
        names.sort();
        assert_eq!(names, ["vectors-new.usearch", "vectors.usearch"]);
        let mut v = Vectors::open(dir.path(), 64).expect("open");
        assert_eq!((v.main.size(), v.new.size()), (10, 2990));
        // A session letting its caches go leaves the fold to the next save; a one-shot save folds.
        v.save(3000, Fold::Later).expect("save");
        assert_eq!(v.main.size(), 10);
        v.save(3000, Fold::Now).expect("save");
        assert_eq!((v.main.size(), v.new.size()), (3000, 0));
        assert!(finds(&v, &mut e, 2999));
    }

    #[test]
    fn keys_hold_the_ordinal_and_the_passage() {
        assert_eq!(split_key(key(123_456, 7)), (123_456, 7));
        assert_eq!(split_key(key(0, 0)), (0, 0));
        assert_ne!(key(1, 0), key(0, 1));
    }
}
