//! One loaded model lent to many sessions: the background server serves every repository of its
//! user with a single copy of the model (loading it is most of a cold command's cost, and most of
//! its resident memory), each repository's session holding a [`Shared`] handle to it.
//!
//! Sessions take turns: the server runs one command at a time, so the lock is never contended
//! there; it only makes the handle safe to hold in more than one place.

use super::{EmbedError, Embedder};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

/// Reads how many heap bytes the process has in use (`None`: it cannot tell).
pub type HeapMeter = fn() -> Option<u64>;

/// A handle to one embedder; clones embed with the same model.
#[derive(Clone)]
pub struct Shared {
    inner: Arc<Mutex<Box<dyn Embedder>>>,
    model_id: String,
    dim: usize,
    meter: Option<HeapMeter>,
    /// Heap the model itself kept while embedding (its runtime's buffers grow to the largest
    /// batch seen), beyond the vectors it returned: the model's cost, not the caller's.
    grown: Arc<AtomicI64>,
}

impl Shared {
    pub fn new(embedder: Box<dyn Embedder>) -> Shared {
        let (model_id, dim) = (embedder.model_id().to_string(), embedder.dim());
        Shared { inner: Arc::new(Mutex::new(embedder)), model_id, dim, meter: None, grown: Arc::new(AtomicI64::new(0)) }
    }

    /// Measure, with `meter`, what embedding keeps on the heap, so that a caller that accounts
    /// for its memory by the heap's growth can leave the model's own growth out
    /// ([`Shared::take_growth`]).
    pub fn metered(mut self, meter: HeapMeter) -> Shared {
        self.meter = Some(meter);
        self
    }

    /// The heap the model kept since the last call (bytes; negative when it gave some back).
    pub fn take_growth(&self) -> i64 {
        self.grown.swap(0, Ordering::SeqCst)
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

    fn ready(&mut self) -> Result<(), EmbedError> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).ready()
    }

    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // A panic while embedding (in another session) leaves the model as it was: ONNX Runtime
        // keeps no state between calls, so the handle goes on working.
        let mut model = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Only bulk work grows the model's buffers enough to count (and reading the heap has a
        // cost of its own).
        let meter = self.meter.filter(|_| texts.len() >= super::cache::BULK);
        let before = meter.and_then(|m| m());
        let vectors = model.embed(texts)?;
        if let (Some(b), Some(a)) = (before, meter.and_then(|m| m())) {
            let returned: usize = vectors.iter().map(|v| v.capacity() * std::mem::size_of::<f32>()).sum();
            self.grown.fetch_add(a as i64 - b as i64 - returned as i64, Ordering::SeqCst);
        }
        Ok(vectors)
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

    /// What the model keeps while embedding is counted apart from the vectors it returns.
    #[test]
    fn the_models_own_growth_is_measured_apart() {
        use std::sync::atomic::AtomicU64;
        static HEAP: AtomicU64 = AtomicU64::new(1_000_000);
        /// Grows the "heap" by 10,000 bytes besides its vectors on each call.
        struct Leaky(HashEmbedder);
        impl Embedder for Leaky {
            fn model_id(&self) -> &str {
                self.0.model_id()
            }
            fn dim(&self) -> usize {
                self.0.dim()
            }
            fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
                let v = self.0.embed(texts)?;
                let bytes: usize = v.iter().map(|v| v.capacity() * 4).sum();
                HEAP.fetch_add(10_000 + bytes as u64, Ordering::SeqCst);
                Ok(v)
            }
        }
        let mut shared =
            Shared::new(Box::new(Leaky(HashEmbedder::new(8)))).metered(|| Some(HEAP.load(Ordering::SeqCst)));
        let bulk = |n: usize| (0..n).map(|i| format!("text {i}")).collect::<Vec<_>>();
        shared.embed(&bulk(8)).expect("embed");
        shared.clone().embed(&bulk(9)).expect("embed");
        assert_eq!(shared.take_growth(), 20_000);
        shared.embed(&bulk(1)).expect("embed");
        assert_eq!(shared.take_growth(), 0, "one text is not measured");
        assert_eq!(shared.take_growth(), 0, "taken");
    }
}
