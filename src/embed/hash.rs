//! A deterministic embedder for tests: hashed word and character-trigram features, normalised.
//! It captures lexical overlap only (no meaning), which is all a unit test of the plumbing needs.

use super::{normalize, EmbedError, Embedder};

/// Feature-hashing embedder; the same text always gives the same vector.
pub struct HashEmbedder {
    dim: usize,
    id: String,
}

impl HashEmbedder {
    pub fn new(dim: usize) -> HashEmbedder {
        HashEmbedder { dim, id: format!("hash-{dim}@1") }
    }

    fn bucket(&self, feature: &str) -> (usize, f32) {
        let h = blake3::hash(feature.as_bytes());
        let b = h.as_bytes();
        let idx = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as usize % self.dim;
        (idx, if b[8] & 1 == 0 { 1.0 } else { -1.0 })
    }
}

impl Embedder for HashEmbedder {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0f32; self.dim];
                let lower = t.to_lowercase();
                for word in lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
                    let (i, s) = self.bucket(word);
                    v[i] += 2.0 * s;
                    let chars: Vec<char> = format!(" {word} ").chars().collect();
                    for w in chars.windows(3) {
                        let (i, s) = self.bucket(&w.iter().collect::<String>());
                        v[i] += s;
                    }
                }
                normalize(&mut v);
                v
            })
            .collect())
    }
}
