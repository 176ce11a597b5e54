//! One loaded model lent to many sessions: the background server serves every repository of its
//! user with a single copy of the model (loading it is most of a cold command's cost, and most of
//! its resident memory), each repository's session holding a [`Shared`] handle to it.
//!
//! Sessions take turns: the server runs one command at a time, so the lock is never contended
//! there; it only makes the handle safe to hold in more than one place.

use super::{EmbedError, Embedder};
use std::sync::{Arc, Mutex};

/// A handle to one embedder; clones embed with the same model.
#[derive(Clone)]
pub struct Shared {
    inner: Arc<Mutex<Box<dyn Embedder>>>,
    model_id: String,
    dim: usize,
}

impl Shared {
    pub fn new(embedder: Box<dyn Embedder>) -> Shared {
        let (model_id, dim) = (embedder.model_id().to_string(), embedder.dim());
        Shared { inner: Arc::new(Mutex::new(embedder)), model_id, dim }
    }

    /// How many handles there are (the server's own one included).
    pub fn holders(&self) -> usize {
        Arc::strong_count(&self.inner)
    }
}

impl Embedder for Shared {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // A panic while embedding (in another session) leaves the model as it was: ONNX Runtime
        // keeps no state between calls, so the handle goes on working.
        let mut model = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        model.embed(texts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::HashEmbedder;

    #[test]
    fn every_handle_embeds_with_the_one_model() {
        let mut a = Shared::new(Box::new(HashEmbedder::new(16)));
        let mut b = a.clone();
        assert_eq!(a.holders(), 2);
        let texts = vec!["retries back off".to_string()];
        let mut plain = HashEmbedder::new(16);
        assert_eq!(a.embed(&texts).expect("embed"), plain.embed(&texts).expect("embed"));
        assert_eq!(b.embed(&texts).expect("embed"), plain.embed(&texts).expect("embed"));
        assert_eq!((b.model_id(), b.dim()), (plain.model_id(), 16));
        drop(b);
        assert_eq!(a.holders(), 1);
    }
}
