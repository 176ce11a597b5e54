//! Searching the Construct: the [`Library`] of shipped and project patterns, hybrid search (BM25
//! over whole patterns, fused with cosine similarity to each pattern's gist, vectors cached on
//! disk by model and text), and [`for_recall`], the calibrated rule for which hits recall shows.

use super::{parse, read_dir, ConstructError, LintProblem, Pattern, Source, RECALL_PATTERNS, SHIPPED};
use crate::embed::{cosine, Embedder};
use crate::index::lexical::Lexical;
use crate::record::RecordId;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The least search score for a pattern to appear in recall (relevance, 0 to 1, with the model).
/// Calibrated with the real model on fixtures/construct/queries.jsonl (questions a pattern answers,
/// and the recall fixture's questions about a project's own facts, which should show none): at
/// 0.45 with [`RECALL_MARGIN`], 69% of the answerable questions show their pattern and 3.4% of all
/// questions show one that does not apply; the old 0.3 showed a stray pattern for 40% of them.
pub const RECALL_MIN_SCORE: f64 = 0.45;

/// How far below the best pattern another may score and still be shown beside it: a runner-up
/// well behind the best is usually a neighbour on the same vocabulary, not a second answer.
pub const RECALL_MARGIN: f64 = 0.1;

/// Without the model: the least raw BM25 score, and the share of the best match's, for a pattern
/// to appear in recall. A relative score cannot be the threshold (any best match scores 1.0, so a
/// single shared word such as "checkout" would attach a pattern). Calibrated on the same fixture:
/// 58% answered, 1.1% stray, against 92% and 89% with the relative score alone. (The derived
/// field's stems add to a match's score: 6.0 gave 58% and 2.2% before them, 73% and 13% after.)
pub const RECALL_MIN_BM25: f32 = 9.0;
const RECALL_BM25_SHARE: f32 = 0.9;

/// A search hit.
#[derive(Clone, Debug, Serialize)]
pub struct Hit {
    pub name: String,
    pub title: String,
    pub intent: String,
    pub tags: Vec<String>,
    pub score: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
    /// The raw BM25 score, when the pattern matched lexically: recall's lexical-only threshold is
    /// absolute, since `score` is relative to the best match and so is 1.0 for any best match.
    #[serde(skip)]
    pub bm25: Option<f32>,
    #[serde(flatten)]
    pub source: Source,
}

/// The shipped patterns and a project's own, ready to search.
pub struct Library {
    pub patterns: Vec<Pattern>,
    /// Problems in project patterns, which are left out (shipped ones are linted in CI).
    pub problems: Vec<LintProblem>,
    lexical: Lexical,
    /// Pattern vectors, computed on first semantic search and kept (model id, vectors).
    vectors: Option<(String, Vec<Vec<f32>>)>,
    /// Where pattern vectors are cached between processes (see [`Library::cache_vectors_in`]).
    vector_cache: Option<PathBuf>,
}

/// The on-disk form of the pattern vector cache: each pattern's vector under the BLAKE3 of its
/// gist, so a changed or added pattern costs only its own vector. (The shipped patterns, the same
/// in every repository, are embedded once per user: see [`crate::embed::TextCache`].)
#[derive(serde::Serialize, serde::Deserialize, Default)]
struct VectorCache {
    model: String,
    vectors: BTreeMap<String, Vec<f32>>,
}

impl VectorCache {
    /// The cache at `path` for `model` (empty when missing, damaged or another model's).
    fn read(path: &Path, model: &str) -> VectorCache {
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice::<VectorCache>(&b).ok())
            .filter(|c| c.model == model)
            .unwrap_or_else(|| VectorCache { model: model.to_string(), vectors: BTreeMap::new() })
    }

    /// Write it whole under a temporary name, then into place (failing to is not an error: it is a
    /// cache).
    fn write(&self, path: &Path) {
        if let (Some(dir), Ok(bytes)) = (path.parent(), serde_json::to_vec(self)) {
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            let _ = std::fs::create_dir_all(dir)
                .and_then(|_| std::fs::write(&tmp, bytes))
                .and_then(|_| std::fs::rename(&tmp, path));
        }
    }
}

impl Library {
    /// The shipped patterns, plus the project's from `project_dir` when given (a missing directory
    /// is no error: the project has none). A project pattern with the name of a shipped one
    /// replaces it.
    pub fn load(project_dir: Option<&Path>) -> Result<Library, ConstructError> {
        let mut by_name: BTreeMap<String, Pattern> = BTreeMap::new();
        for (name, text) in SHIPPED {
            by_name.insert(name.to_string(), parse(name, text, Source::Shipped).0);
        }
        let mut problems = Vec::new();
        if let Some(dir) = project_dir.filter(|d| d.is_dir()) {
            for (name, text, path) in read_dir(dir)? {
                let (pattern, found) = parse(&name, &text, Source::Project { path });
                if found.is_empty() {
                    by_name.insert(name, pattern);
                } else {
                    problems.extend(found.into_iter().map(|p| LintProblem {
                        file: format!("{name}.md"),
                        field: p.field,
                        message: p.message,
                    }));
                }
            }
        }
        let patterns: Vec<Pattern> = by_name.into_values().collect();
        let mut lexical = Lexical::in_memory().map_err(|e| ConstructError::Index(e.to_string()))?;
        let docs: Vec<(RecordId, String)> = patterns.iter().map(|p| (RecordId([0; 32]), p.search_text())).collect();
        lexical.add(0, &docs).map_err(|e| ConstructError::Index(e.to_string()))?;
        Ok(Library { patterns, problems, lexical, vectors: None, vector_cache: None })
    }

    /// Keep pattern vectors in `path` between processes (a derived cache: a missing, stale or
    /// damaged file is recomputed and rewritten, and failing to write it is not an error).
    pub fn cache_vectors_in(&mut self, path: PathBuf) {
        self.vector_cache = Some(path);
    }

    fn ensure_vectors(&mut self, e: &mut dyn Embedder) -> Result<(), ConstructError> {
        if self.vectors.as_ref().is_some_and(|(id, _)| id == e.model_id()) {
            return Ok(());
        }
        let model = e.model_id().to_string();
        let mut cache = self.vector_cache.as_deref().map(|p| VectorCache::read(p, &model));
        let keys: Vec<String> =
            self.patterns.iter().map(|p| blake3::hash(p.gist().as_bytes()).to_hex().to_string()).collect();
        let mut vectors: Vec<Option<Vec<f32>>> =
            keys.iter().map(|k| cache.as_ref().and_then(|c| c.vectors.get(k)).cloned()).collect();
        let missing: Vec<usize> = (0..vectors.len()).filter(|&i| vectors[i].is_none()).collect();
        if !missing.is_empty() {
            let texts: Vec<String> = missing.iter().map(|&i| self.patterns[i].gist()).collect();
            for (i, v) in missing.iter().zip(e.embed(&texts)?) {
                vectors[*i] = Some(v);
            }
        }
        let vectors: Vec<Vec<f32>> = vectors.into_iter().map(Option::unwrap_or_default).collect();
        // Rewrite the file when it does not hold exactly this library's vectors.
        if let (Some(c), Some(path)) = (cache.as_mut(), &self.vector_cache) {
            let wanted: BTreeMap<String, Vec<f32>> = keys.iter().cloned().zip(vectors.iter().cloned()).collect();
            if c.vectors != wanted {
                c.vectors = wanted;
                c.write(path);
            }
        }
        self.vectors = Some((model, vectors));
        Ok(())
    }

    /// A pattern by name.
    pub fn get(&self, name: &str) -> Option<&Pattern> {
        self.patterns.iter().find(|p| p.name == name.trim().trim_end_matches(".md"))
    }

    /// The best `k` patterns for `query`: BM25 alone, or fused with cosine similarity when an
    /// embedder is given (the same relevance as recall). Vector-only matches need
    /// [`crate::rank::MIN_SIMILARITY`].
    pub fn search(
        &mut self,
        query: &str,
        k: usize,
        embedder: Option<&mut dyn Embedder>,
    ) -> Result<Vec<Hit>, ConstructError> {
        self.search_with(query, None, k, embedder)
    }

    /// [`Library::search`] with the query already embedded (model id, vector), as recall has it;
    /// used only when it comes from the same model as `embedder`.
    pub fn search_with(
        &mut self,
        query: &str,
        query_vector: Option<&(String, Vec<f32>)>,
        k: usize,
        embedder: Option<&mut dyn Embedder>,
    ) -> Result<Vec<Hit>, ConstructError> {
        let lexical =
            self.lexical.search(query, self.patterns.len()).map_err(|e| ConstructError::Index(e.to_string()))?;
        let best = lexical.first().map(|(_, s)| *s).unwrap_or(0.0);
        let mut bm25: Vec<Option<f32>> = vec![None; self.patterns.len()];
        for (key, score) in lexical {
            if let Some(slot) = bm25.get_mut(key as usize) {
                *slot = Some(score);
            }
        }
        let mut similarity: Vec<Option<f32>> = vec![None; self.patterns.len()];
        let semantic = embedder.is_some();
        if let Some(e) = embedder {
            self.ensure_vectors(e)?;
            let q = match query_vector.filter(|(model, _)| model == e.model_id()) {
                Some((_, v)) => v.clone(),
                None => e.embed(&[query.to_string()])?.pop().unwrap_or_default(),
            };
            if let Some((_, vectors)) = &self.vectors {
                for (slot, v) in similarity.iter_mut().zip(vectors) {
                    *slot = Some(cosine(&q, v));
                }
            }
        }
        let mut hits: Vec<Hit> = self
            .patterns
            .iter()
            .enumerate()
            .filter(|(i, _)| bm25[*i].is_some() || similarity[*i].is_some_and(|s| s >= crate::rank::MIN_SIMILARITY))
            .map(|(i, p)| Hit {
                name: p.name.clone(),
                title: p.title.clone(),
                intent: p.section("Intent").to_string(),
                tags: p.tags.clone(),
                score: crate::rank::relevance(bm25[i], best, similarity[i], semantic),
                similarity: similarity[i],
                bm25: bm25[i],
                source: p.source.clone(),
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.name.cmp(&b.name)));
        hits.truncate(k);
        Ok(hits)
    }
}

/// The hits recall shows, from a search's best-first hits: at most [`RECALL_PATTERNS`], each
/// scoring at least [`RECALL_MIN_SCORE`] and within [`RECALL_MARGIN`] of the best; without the
/// model (no similarity on the hits), at least [`RECALL_MIN_BM25`] and 90% of the best BM25.
pub fn for_recall(hits: Vec<Hit>) -> Vec<Hit> {
    let semantic = hits.iter().any(|h| h.similarity.is_some());
    let best = hits.iter().map(|h| h.score).fold(f64::MIN, f64::max);
    let best_bm25 = hits.iter().filter_map(|h| h.bm25).fold(0.0, f32::max);
    hits.into_iter()
        .filter(|h| match semantic {
            true => h.score >= RECALL_MIN_SCORE && h.score >= best - RECALL_MARGIN,
            false => h.bm25.is_some_and(|b| b >= RECALL_MIN_BM25 && b >= RECALL_BM25_SHARE * best_bm25),
        })
        .take(RECALL_PATTERNS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_vectors_are_cached_between_processes_and_recomputed_when_stale() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("neo").join("construct-vectors.json");
        let mut e = crate::embed::HashEmbedder::new(64);
        let mut first = Library::load(None).expect("load");
        first.cache_vectors_in(path.clone());
        let hits = first.search("bisect a regression", 1, Some(&mut e)).expect("search");
        assert_eq!(hits[0].name, "bisect-a-regression");
        let mut cache: VectorCache = serde_json::from_slice(&std::fs::read(&path).expect("written")).expect("json");
        assert_eq!(cache.vectors.len(), SHIPPED.len());
        // A second library reads the cache instead of embedding: zeroed vectors prove it.
        for v in cache.vectors.values_mut() {
            v.iter_mut().for_each(|x| *x = 0.0);
        }
        std::fs::write(&path, serde_json::to_vec(&cache).expect("json")).expect("write");
        let mut second = Library::load(None).expect("load");
        second.cache_vectors_in(path.clone());
        let hits = second.search("bisect a regression", 1, Some(&mut e)).expect("search");
        assert_eq!(hits[0].similarity, Some(0.0), "read from the cache");
        // Another model's cache is recomputed.
        cache.model = "other".into();
        std::fs::write(&path, serde_json::to_vec(&cache).expect("json")).expect("write");
        let mut third = Library::load(None).expect("load");
        third.cache_vectors_in(path);
        let hits = third.search("bisect a regression", 1, Some(&mut e)).expect("search");
        assert!(hits[0].similarity.is_some_and(|s| s > 0.1), "{hits:?}");
    }

    #[test]
    fn a_query_embedded_by_recall_gives_the_same_hits_and_another_models_vector_is_ignored() {
        let mut e = crate::embed::HashEmbedder::new(64);
        let mut lib = Library::load(None).expect("load");
        let q = "undo a database migration";
        let own = lib.search(q, 3, Some(&mut e)).expect("search");
        let v = (e.model_id().to_string(), e.embed(&[q.to_string()]).expect("embed").remove(0));
        let given = lib.search_with(q, Some(&v), 3, Some(&mut e)).expect("search");
        let names = |h: &[Hit]| h.iter().map(|h| (h.name.clone(), h.similarity)).collect::<Vec<_>>();
        assert_eq!(names(&own), names(&given));
        let foreign = ("another-model".to_string(), vec![0.0; 64]);
        let ignored = lib.search_with(q, Some(&foreign), 3, Some(&mut e)).expect("search");
        assert_eq!(names(&own), names(&ignored));
    }
}
