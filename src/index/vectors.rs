//! The vector index: usearch, cosine metric, f16 storage (i8 lost recall in a measurement here).

use crate::embed::{EmbedError, Embedder};
use std::path::Path;

/// Errors from the vector index.
#[derive(Debug, thiserror::Error)]
pub enum VectorError {
    #[error("usearch: {0}")]
    Usearch(String),
    #[error(transparent)]
    Embed(EmbedError),
}

fn us(e: impl std::fmt::Display) -> VectorError {
    VectorError::Usearch(e.to_string())
}

/// A usearch index of unit vectors keyed by ordinal.
pub struct Vectors {
    index: usearch::Index,
    dim: usize,
}

fn options(dim: usize) -> usearch::IndexOptions {
    usearch::IndexOptions {
        dimensions: dim,
        metric: usearch::MetricKind::Cos,
        quantization: usearch::ScalarKind::F16,
        ..Default::default()
    }
}

/// Records embedded per model call.
const BATCH: usize = 64;

impl Vectors {
    pub fn new(dim: usize) -> Result<Vectors, VectorError> {
        Ok(Vectors { index: usearch::Index::new(&options(dim)).map_err(us)?, dim })
    }

    pub fn open(path: &Path, dim: usize) -> Result<Vectors, VectorError> {
        let v = Vectors::new(dim)?;
        v.index.load(&path.to_string_lossy()).map_err(us)?;
        if v.index.dimensions() != dim {
            return Err(VectorError::Usearch(format!(
                "the index has {} dimensions, expected {dim}",
                v.index.dimensions()
            )));
        }
        Ok(v)
    }

    pub fn contains(&self, key: u64) -> bool {
        self.index.contains(key)
    }

    pub fn len(&self) -> usize {
        self.index.size()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Embed and add `texts` under their keys; returns how many were added.
    pub fn add_texts(
        &mut self,
        texts: &[(u64, String)],
        embedder: &mut dyn Embedder,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<usize, VectorError> {
        if texts.is_empty() {
            return Ok(0);
        }
        // usearch needs capacity reserved before adding (and threads for parallel adds).
        self.index.reserve(self.index.size() + texts.len()).map_err(us)?;
        let mut done = 0;
        for chunk in texts.chunks(BATCH) {
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
                if self.index.contains(*key) {
                    self.index.remove(*key).map_err(us)?;
                }
                self.index.add(*key, &v).map_err(us)?;
            }
            done += chunk.len();
            progress(done, texts.len());
        }
        Ok(done)
    }

    pub fn save(&self, path: &Path) -> Result<(), VectorError> {
        let tmp = path.with_extension("tmp");
        self.index.save(&tmp.to_string_lossy()).map_err(us)?;
        std::fs::rename(&tmp, path).map_err(us)
    }

    /// Exact (brute-force) search, for measuring the approximate index's recall.
    pub fn exact_search(&self, query: &[f32], limit: usize) -> Result<Vec<(u64, f32)>, VectorError> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        let m = self.index.exact_search(query, limit.max(1)).map_err(us)?;
        Ok(m.keys.into_iter().zip(m.distances).map(|(k, d)| (k, 1.0 - d)).collect())
    }

    /// (key, cosine similarity), best first.
    pub fn search(&self, query: &[f32], limit: usize) -> Result<Vec<(u64, f32)>, VectorError> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        let m = self.index.search(query, limit.max(1)).map_err(us)?;
        Ok(m.keys.into_iter().zip(m.distances).map(|(k, d)| (k, 1.0 - d)).collect())
    }
}
