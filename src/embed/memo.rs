//! An embedder that remembers the vectors of the last few texts it embedded. A write embeds the
//! new fact once for the similarity check, and the recall index then needs the same text's vector
//! when it catches up; a warm server also sees the same query twice. Remembering a handful of
//! recent texts turns those repeats into lookups, without any caller having to pass vectors around.

use super::{EmbedError, Embedder};
use std::collections::VecDeque;

/// How many recent (text, vector) pairs are kept.
pub const REMEMBERED: usize = 64;

/// Wraps an embedder; vectors are the inner embedder's, bit for bit.
pub struct Memo {
    inner: Box<dyn Embedder>,
    recent: VecDeque<(String, Vec<f32>)>,
}

impl Memo {
    pub fn new(inner: Box<dyn Embedder>) -> Memo {
        Memo { inner, recent: VecDeque::with_capacity(REMEMBERED) }
    }

    fn remembered(&self, text: &str) -> Option<&Vec<f32>> {
        self.recent.iter().find(|(t, _)| t == text).map(|(_, v)| v)
    }
}

impl Embedder for Memo {
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
        let missing: Vec<String> = texts.iter().filter(|t| self.remembered(t).is_none()).cloned().collect();
        // A bulk call (a reindex) is not worth remembering, and would only push out the rest.
        if missing.len() > REMEMBERED {
            return self.inner.embed(texts);
        }
        let fresh = if missing.is_empty() { Vec::new() } else { self.inner.embed(&missing)? };
        let fresh: std::collections::HashMap<String, Vec<f32>> = missing.into_iter().zip(fresh).collect();
        // Answer before remembering: remembering the new vectors may push out a text of this
        // very call that was remembered when it began.
        let out = texts
            .iter()
            .map(|t| {
                fresh
                    .get(t)
                    .or_else(|| self.remembered(t))
                    .cloned()
                    .ok_or_else(|| EmbedError::Model("a vector the model returned went missing".into()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        for (t, v) in fresh {
            if self.recent.len() == REMEMBERED {
                self.recent.pop_front();
            }
            self.recent.push_back((t, v));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::HashEmbedder;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use crate::embed::Counting;

    #[test]
    fn repeats_are_lookups_and_vectors_are_unchanged() {
        let texts = |s: &[&str]| s.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        let count = Arc::new(AtomicUsize::new(0));
        let mut plain = HashEmbedder::new(32);
        let mut memo = Memo::new(Box::new(Counting(HashEmbedder::new(32), count.clone())));
        let first = memo.embed(&texts(&["alpha beta", "gamma"])).expect("embed");
        let again = memo.embed(&texts(&["gamma", "delta", "alpha beta"])).expect("embed");
        assert_eq!(first, plain.embed(&texts(&["alpha beta", "gamma"])).expect("embed"));
        assert_eq!(again, plain.embed(&texts(&["gamma", "delta", "alpha beta"])).expect("embed"));
        assert_eq!(count.load(Ordering::Relaxed), 3, "gamma and alpha beta were remembered");
        let bulk: Vec<String> = (0..REMEMBERED + 1).map(|i| format!("text {i}")).collect();
        assert_eq!(memo.embed(&bulk).expect("embed").len(), REMEMBERED + 1);
        assert_eq!(count.load(Ordering::Relaxed), 3 + REMEMBERED + 1, "a bulk call goes straight through");
        memo.embed(&texts(&["delta"])).expect("embed");
        assert_eq!(count.load(Ordering::Relaxed), 3 + REMEMBERED + 1, "and does not push out what was remembered");
    }

    /// A call that mixes the oldest remembered text with enough new ones to push it out (a
    /// Construct library embedded after a run of writes) still answers every text.
    #[test]
    fn new_vectors_never_push_out_a_text_of_the_same_call() {
        let mut plain = HashEmbedder::new(32);
        let mut memo = Memo::new(Box::new(HashEmbedder::new(32)));
        let full: Vec<String> = (0..REMEMBERED).map(|i| format!("old {i}")).collect();
        memo.embed(&full).expect("embed");
        let mut mixed = vec!["old 0".to_string()];
        mixed.extend((0..REMEMBERED / 2).map(|i| format!("new {i}")));
        assert_eq!(memo.embed(&mixed).expect("every text answered"), plain.embed(&mixed).expect("embed"));
    }
}
