//! The recall layer from the project's documents: the sections of ingested documents that best
//! match a query, read from the blobs their sources point at. Section vectors are cached in
//! `.git/neo/documents.json` by model and section hash (a section is embedded once until its
//! text changes); without a model, sections are matched by the query's words.

use crate::api::memory::Memory;
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::recall::DocumentSection;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// Sections shown at most.
pub const DOCUMENT_SECTIONS: usize = 3;
/// Least cosine similarity for a section to be shown (with the model).
pub const MIN_DOCUMENT_SIMILARITY: f32 = 0.3;
/// Least share of the query's words a section must hold (without the model).
pub const MIN_WORD_SHARE: f64 = 0.5;
/// Characters of a section shown.
const EXCERPT_CHARS: usize = 600;

/// What a warm memory keeps between recalls: the sections of the current documents (read from
/// their blobs once per set of sources) and the vectors (read from disk once).
/// Where a warm session keeps one memory's [`DocumentCache`] (beside its indexes).
pub type DocumentSlot = std::sync::Mutex<Option<DocumentCache>>;

pub struct DocumentCache {
    /// The memory's tips when the sources were last listed: while they stay, nothing is scanned.
    tips: Vec<String>,
    sources: Vec<crate::record::RecordId>,
    sections: Arc<Vec<SectionText>>,
    vectors: Option<Arc<VectorCache>>,
}

#[derive(Default, Clone, Serialize, Deserialize)]
struct VectorCache {
    model: String,
    /// `hash:heading` → vector.
    vectors: BTreeMap<String, Vec<f32>>,
}

/// The lowercased words of `s` longer than two characters.
/// Whether a section is a table of contents: most of its lines (headings aside) link to anchors
/// in the document.
fn is_contents(body: &str) -> bool {
    let lines: Vec<&str> = body.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let links = lines.iter().filter(|l| l.contains("](#")).count();
    links >= 2 && links * 10 >= lines.len() * 6
}

fn words(s: &str) -> HashSet<String> {
    s.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 2).map(str::to_lowercase).collect()
}

/// A section of a current document, with its source, path and text.
/// One section of a current document, with its text read from the document's blob.
struct SectionText {
    source: crate::record::RecordId,
    path: String,
    section: crate::record::Section,
    body: String,
}

/// Keep `cache` for the next recall of this memory.
fn keep_vectors(slot: &DocumentSlot, cache: VectorCache) -> Arc<VectorCache> {
    let cache = Arc::new(cache);
    if let Some(c) = slot.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        c.vectors = Some(cache.clone());
    }
    cache
}

fn key(s: &crate::record::Section) -> String {
    format!("{}:{}", s.hash, s.heading)
}

impl Memory {
    /// Every section of the project's current documents with its text, read from the blobs
    /// (once per set of current sources).
    fn section_texts(&self, slot: &DocumentSlot) -> Arc<Vec<SectionText>> {
        let tips = self.tip_ids();
        let mut held = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = held.as_ref().filter(|c| c.tips == tips) {
            return c.sections.clone();
        }
        // The tips moved: list the sources again (a scan of the state), and read the blobs only
        // when the sources themselves changed.
        let ids: Vec<crate::record::RecordId> = self.sources().values().map(|(id, _)| *id).collect();
        let (sections, vectors) = match held.take() {
            Some(c) if c.sources == ids => (c.sections, c.vectors),
            other => (Arc::new(self.read_section_texts()), other.and_then(|c| c.vectors)),
        };
        *held = Some(DocumentCache { tips, sources: ids, sections: sections.clone(), vectors });
        sections
    }

    fn read_section_texts(&self) -> Vec<SectionText> {
        let mut sections = Vec::new();
        for (id, s) in self.sources().values() {
            let Ok(blob) = crate::store::ObjectId::from_hex(s.blob.as_bytes()) else { continue };
            // A blob no longer in the object database (a shallow clone, rewritten history) leaves
            // only the structure: the section is not shown.
            let Ok(bytes) = self.store.read_blob(blob) else { continue };
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let lines: Vec<&str> = text.lines().collect();
            for sec in &s.sections {
                let (a, b) = (sec.lines.start as usize, sec.lines.end as usize);
                let body = lines.get(a.saturating_sub(1)..b.min(lines.len())).unwrap_or_default().join("\n");
                sections.push(SectionText { source: *id, path: s.path.clone(), section: sec.clone(), body });
            }
        }
        sections
    }

    /// The cached section vectors for `embedder`'s model, with every section of `sections`
    /// embedded (those missing, in batches, reporting `progress(done, total)`) and saved.
    fn document_vectors(
        &self,
        slot: &DocumentSlot,
        sections: &[SectionText],
        e: &mut dyn Embedder,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Arc<VectorCache>> {
        let path = self.store.caches().document_vectors();
        let held = slot.lock().unwrap_or_else(|e| e.into_inner()).as_ref().and_then(|c| c.vectors.clone());
        let mut cache: VectorCache = match held.filter(|c| c.model == e.model_id()) {
            Some(c) if sections.iter().all(|s| c.vectors.contains_key(&key(&s.section))) => return Ok(c),
            Some(c) => (*c).clone(),
            None => std::fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .filter(|c: &VectorCache| c.model == e.model_id())
                .unwrap_or_else(|| VectorCache { model: e.model_id().to_string(), ..VectorCache::default() }),
        };
        let missing: Vec<usize> =
            (0..sections.len()).filter(|&i| !cache.vectors.contains_key(&key(&sections[i].section))).collect();
        if missing.is_empty() {
            return Ok(keep_vectors(slot, cache));
        }
        let total = missing.len();
        for (done, chunk) in missing.chunks(64).enumerate() {
            let texts: Vec<String> =
                chunk.iter().map(|&i| format!("{}\n{}", sections[i].section.heading, sections[i].body)).collect();
            let vectors = e.embed(&texts).map_err(crate::index::IndexError::Embed)?;
            for (&i, v) in chunk.iter().zip(vectors) {
                cache.vectors.insert(key(&sections[i].section), v);
            }
            progress(((done + 1) * 64).min(total), total);
        }
        let live: HashSet<String> = sections.iter().map(|s| key(&s.section)).collect();
        cache.vectors.retain(|k, _| live.contains(k));
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let bytes = serde_json::to_vec(&cache).map_err(|e| Error::invalid("documents", e.to_string()))?;
        // A cache: failing to save it costs an embedding next time, nothing more.
        let _ = std::fs::write(&path, bytes);
        Ok(keep_vectors(slot, cache))
    }

    /// Embed the sections of the current documents that have no cached vector yet (what
    /// `git neo ingest` does after writing, so the first recall does not wait for it).
    pub fn embed_documents(
        &self,
        slot: &DocumentSlot,
        e: &mut dyn Embedder,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<usize> {
        let sections = self.section_texts(slot);
        let cache = self.document_vectors(slot, &sections, e, progress)?;
        Ok(cache.vectors.len())
    }

    /// The sections of the project's current documents that best match `query` (with its vector
    /// when the model embedded it), at most `k`, best first.
    pub fn document_hits(
        &self,
        slot: &DocumentSlot,
        query: &str,
        query_vector: Option<&[f32]>,
        embedder: Option<&mut dyn Embedder>,
        k: usize,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<DocumentSection>> {
        let sections = self.section_texts(slot);
        if sections.is_empty() {
            return Ok(Vec::new());
        }
        let mut scored: Vec<(f32, usize)> = match (query_vector, embedder) {
            (Some(q), Some(e)) => {
                let cache = self.document_vectors(slot, &sections, e, progress)?;
                sections
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| cache.vectors.get(&key(&s.section)).map(|v| (crate::embed::cosine(q, v), i)))
                    .filter(|(score, _)| *score >= MIN_DOCUMENT_SIMILARITY)
                    .collect()
            }
            _ => {
                let want = words(query);
                sections
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| {
                        let have = words(&format!("{}\n{}", s.section.heading, s.body));
                        let share = want.iter().filter(|w| have.contains(*w)).count() as f64 / want.len().max(1) as f64;
                        (share >= MIN_WORD_SHARE && !want.is_empty()).then_some((share as f32, i))
                    })
                    .collect()
            }
        };
        // A table of contents names every section's words: it is shown only when no section of
        // its document matched itself.
        let answered: HashSet<crate::record::RecordId> =
            scored.iter().filter(|(_, i)| !is_contents(&sections[*i].body)).map(|(_, i)| sections[*i].source).collect();
        scored.retain(|(_, i)| !(is_contents(&sections[*i].body) && answered.contains(&sections[*i].source)));
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        Ok(scored
            .into_iter()
            .take(k)
            .map(|(score, i)| {
                let SectionText { source, path, section: sec, body } = &sections[i];
                let mut excerpt: String = body.chars().take(EXCERPT_CHARS).collect();
                if excerpt.len() < body.len() {
                    excerpt.push('…');
                }
                DocumentSection {
                    source: *source,
                    path: path.clone(),
                    heading: sec.heading.clone(),
                    lines: [sec.lines.start, sec.lines.end],
                    score,
                    excerpt,
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_of_contents_are_recognised() {
        assert!(is_contents("## FAQ\n\n* [One](#one)\n* [Two](#two)\n* [Three](#three)\n"));
        assert!(!is_contents("Intro text that links [one](#one) once.\nAnd says more.\nAnd more.\n"));
    }
}
