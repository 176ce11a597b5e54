//! The user's vector cache: what the model returned for a text, kept under the text's BLAKE3 in
//! one file per model in the cache directory, so that a memory this user has embedded once (in
//! another clone, worktree or fork of the same project) is not embedded again. Records are
//! content-addressed, so a fresh clone holds texts whose vectors the machine already has; without
//! this, the first recall there embeds every record while someone waits.
//!
//! It is consulted only for bulk work (an index built or caught up, a Construct library): one
//! query or one new fact is cheaper to embed than the file is to read, and the [`super::Memo`]
//! in front already answers repeats of those.
//!
//! The file is append-only, one entry per text: the key, the vector as little-endian f32 (so a
//! cached vector is the model's, bit for bit) and a check over both. A torn or damaged entry
//! ends what is read (the file is then rewritten from the good entries); past [`MAX_BYTES`] the
//! older half is dropped. It is a cache: any failure to read or write it only means embedding.

use super::{EmbedError, Embedder};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

/// Calls with fewer texts than this go straight to the model.
pub const BULK: usize = 8;

/// The file's size at most (about 10,000 vectors of 384 dimensions): a bulk call reads it whole
/// (a 36 MB file took a noticeable part of a fresh process's first recall), so it is kept to what
/// a few memories of the user's need.
pub const MAX_BYTES: u64 = 16 << 20;

/// Vectors by the BLAKE3 of their text.
type Vectors = HashMap<[u8; 32], Vec<f32>>;

/// Wraps an embedder with the user's vector cache at `path`.
pub struct TextCache {
    inner: Box<dyn Embedder>,
    path: PathBuf,
    /// The file's entries, read on the first bulk call and kept (a long-lived server reads the
    /// file once); with the file length they were read at.
    known: Option<(Vectors, u64)>,
}

impl TextCache {
    pub fn new(inner: Box<dyn Embedder>, path: PathBuf) -> TextCache {
        TextCache { inner, path, known: None }
    }

    fn entry_len(&self) -> usize {
        32 + 4 * self.inner.dim() + 8
    }

    fn check(key: &[u8], vector: &[u8]) -> [u8; 8] {
        let mut h = blake3::Hasher::new();
        h.update(key);
        h.update(vector);
        let mut out = [0u8; 8];
        out.copy_from_slice(&h.finalize().as_bytes()[..8]);
        out
    }

    /// The entries of the file (read again when another process appended to it).
    fn load(&mut self) -> &mut Vectors {
        let len = std::fs::metadata(&self.path).map_or(0, |m| m.len());
        if self.known.as_ref().is_none_or(|(_, at)| *at != len) {
            let bytes = std::fs::read(&self.path).unwrap_or_default();
            let (size, dim) = (self.entry_len(), self.inner.dim());
            let mut map = HashMap::new();
            let mut good = 0;
            for entry in bytes.chunks(size) {
                if entry.len() != size || entry[size - 8..] != Self::check(&entry[..32], &entry[32..size - 8]) {
                    break;
                }
                let mut key = [0u8; 32];
                key.copy_from_slice(&entry[..32]);
                let vector: Vec<f32> = entry[32..32 + 4 * dim]
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                map.insert(key, vector);
                good += size;
            }
            if good < bytes.len() {
                // Damaged past `good`: keep what is sound, so that later appends are readable.
                self.rewrite(&bytes[..good]);
            }
            self.known = Some((map, good as u64));
        }
        &mut self.known.as_mut().expect("read above").0
    }

    fn rewrite(&self, bytes: &[u8]) {
        let tmp = self.path.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, &self.path)).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }

    /// Append `new` (key, vector) entries in one write; past [`MAX_BYTES`], keep the newer half.
    fn append(&mut self, new: &[([u8; 32], &Vec<f32>)]) {
        let size = self.entry_len();
        let mut bytes = Vec::with_capacity(new.len() * size);
        for (key, vector) in new.iter().take(MAX_BYTES as usize / 2 / size) {
            let start = bytes.len();
            bytes.extend_from_slice(key);
            vector.iter().for_each(|x| bytes.extend_from_slice(&x.to_le_bytes()));
            let check = Self::check(&bytes[start..start + 32], &bytes[start + 32..]);
            bytes.extend_from_slice(&check);
        }
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let len = std::fs::metadata(&self.path).map_or(0, |m| m.len());
        if len + bytes.len() as u64 > MAX_BYTES {
            let old = std::fs::read(&self.path).unwrap_or_default();
            let keep_from = (old.len() / size / 2) * size;
            let mut kept = old[keep_from.min(old.len())..].to_vec();
            kept.truncate(kept.len() / size * size);
            kept.extend_from_slice(&bytes);
            self.rewrite(&kept);
            self.known = None;
            return;
        }
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        if let Ok(mut f) = options.open(&self.path) {
            // One write for the whole batch: appends of other processes land before or after it.
            let _ = f.write_all(&bytes);
        }
    }
}

impl Embedder for TextCache {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn ready(&mut self) -> Result<(), EmbedError> {
        self.inner.ready()
    }

    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.len() < BULK {
            return self.inner.embed(texts);
        }
        let keys: Vec<[u8; 32]> = texts.iter().map(|t| *blake3::hash(t.as_bytes()).as_bytes()).collect();
        let dim = self.inner.dim();
        let known = self.load();
        let mut out: Vec<Option<Vec<f32>>> =
            keys.iter().map(|k| known.get(k).filter(|v| v.len() == dim).cloned()).collect();
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            let asked: Vec<String> = missing.iter().map(|&i| texts[i].clone()).collect();
            let fresh = self.inner.embed(&asked)?;
            let entries: Vec<([u8; 32], &Vec<f32>)> = missing.iter().zip(&fresh).map(|(&i, v)| (keys[i], v)).collect();
            self.append(&entries);
            if let Some((map, at)) = self.known.as_mut() {
                for (key, v) in &entries {
                    map.insert(*key, (*v).clone());
                }
                *at = std::fs::metadata(&self.path).map_or(0, |m| m.len());
            }
            for (i, v) in missing.into_iter().zip(fresh) {
                out[i] = Some(v);
            }
        }
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::HashEmbedder;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use crate::embed::Counting;

    fn texts(range: std::ops::Range<usize>) -> Vec<String> {
        range.map(|i| format!("Service {i} keeps its retry queue bounded")).collect()
    }

    /// A second clone's bulk embedding (another process: a new cache over the same file) finds
    /// every vector the first computed, bit for bit, and embeds only what is new.
    #[test]
    fn a_memory_embedded_once_is_not_embedded_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("vectors").join("model.bin");
        let count = Arc::new(AtomicUsize::new(0));
        let cached = |count: &Arc<AtomicUsize>| {
            TextCache::new(Box::new(Counting(HashEmbedder::new(16), count.clone())), path.clone())
        };
        let mut plain = HashEmbedder::new(16);
        let first = cached(&count).embed(&texts(0..20)).expect("embed");
        assert_eq!(first, plain.embed(&texts(0..20)).expect("embed"));
        assert_eq!(count.load(Ordering::Relaxed), 20);
        let mut second = cached(&count);
        assert_eq!(second.embed(&texts(5..30)).expect("embed"), plain.embed(&texts(5..30)).expect("embed"));
        assert_eq!(count.load(Ordering::Relaxed), 30, "only the ten new texts were embedded");
        // Small calls go straight to the model.
        second.embed(&texts(0..2)).expect("embed");
        assert_eq!(count.load(Ordering::Relaxed), 32);
    }

    /// A torn last entry (a process killed mid-write) costs only that entry: the file is cut
    /// back to the sound ones, and what is appended after is read again.
    #[test]
    fn a_damaged_file_is_cut_back_to_its_sound_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("model.bin");
        let count = Arc::new(AtomicUsize::new(0));
        let cached = || TextCache::new(Box::new(Counting(HashEmbedder::new(16), count.clone())), path.clone());
        cached().embed(&texts(0..10)).expect("embed");
        let mut bytes = std::fs::read(&path).expect("written");
        bytes.extend_from_slice(&[7u8; 40]);
        std::fs::write(&path, &bytes).expect("damage");
        cached().embed(&texts(0..12)).expect("embed");
        assert_eq!(count.load(Ordering::Relaxed), 12, "the ten sound entries were read");
        cached().embed(&texts(0..12)).expect("embed");
        assert_eq!(count.load(Ordering::Relaxed), 12, "and the two appended after the cut too");
    }
}
