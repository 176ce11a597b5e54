//! PURE. Weak-result expansion: when recall's first pass is weak, one more pass with a query
//! widened by pseudo-relevance feedback, each index learning from the other, and no model call.
//!
//! - **Weak** ([`weak`]): the best vector match is below [`WEAK_COSINE`], or the lexical and the
//!   vector top ten share fewer than [`AGREEMENT`] records (the two indexes disagree about what
//!   the query is about). Without vectors, nothing is weak (there is nothing to disagree with).
//! - **Lexical side (RM3-like)**: the words of the vector side's top [`FEEDBACK`] records, weighed
//!   by how often they occur there and how rare they are in the index (tf × idf), give the
//!   [`TERMS`] best words the query lacks; they join the query's OR at a boost of at most
//!   [`TERM_BOOST`] ([`feedback_terms`]).
//! - **Vector side (Rocchio)**: the query's vector plus [`ROCCHIO_BETA`] times the mean of the
//!   lexical side's top [`FEEDBACK`] records' vectors (already in the index: no embedding), made
//!   unit length again ([`rocchio`]). A lexical record whose vector is less similar to the query
//!   than recall's floor for a vector match is no feedback (a paraphrase's incidental word
//!   matches must not pull the query away from what it means).
//!
//! The moved vector only finds candidates: the caller ranks every candidate by its similarity to
//! the query as asked. So an expansion costs one more lexical query and one more vector query.
//! The measurements that set these constants are in docs/recall.md.

use serde::Serialize;

/// Below this best cosine, the vector side found nothing close.
pub const WEAK_COSINE: f32 = 0.45;
/// Fewer shared records than this in the two top tens: the indexes disagree.
pub const AGREEMENT: usize = 2;
/// Records each side's feedback reads.
pub const FEEDBACK: usize = 3;
/// Feedback words added to the lexical query.
pub const TERMS: usize = 8;
/// The boost of the best feedback word (the others in proportion to their weight).
pub const TERM_BOOST: f32 = 0.3;
/// Rocchio's weight of the feedback records' mean vector beside the query's.
pub const ROCCHIO_BETA: f32 = 0.5;

/// What recall's JSON says about an expansion.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Expansion {
    /// Why the first pass was weak.
    pub reason: String,
    /// The words added to the lexical query.
    pub terms: Vec<String>,
    /// Records the vector query was moved towards.
    pub feedback: usize,
}

/// When recall expands (`neo.recall.expand`), read with the other recall settings.
pub use crate::config::ExpandWhen as When;

/// Why the first pass (lexical and vector candidates, best first) is weak, if it is, by the
/// tests `when` applies.
pub fn weak<T: PartialEq>(when: When, lexical: &[(T, f32)], vector: &[(T, f32)]) -> Option<String> {
    let best = vector.first()?.1;
    if when == When::Never {
        return None;
    }
    if best < WEAK_COSINE && when == When::Weak {
        return Some(format!("the best vector match has cosine {best:.2}, below {WEAK_COSINE}"));
    }
    if lexical.is_empty() {
        return None;
    }
    let shared = vector.iter().take(10).filter(|(v, _)| lexical.iter().take(10).any(|(l, _)| l == v)).count();
    // A list shorter than the agreement asked for (a small memory, a rare word) agrees as much
    // as it can when all of it is shared: one lexical match that the vectors also rank is no
    // disagreement.
    let needed = AGREEMENT.min(lexical.len().min(10)).min(vector.len().min(10));
    (shared < needed).then(|| format!("the lexical and vector top ten share {shared} of their records"))
}

/// The feedback words for `query` from `texts` (the feedback records' words as written), each
/// with its boost: `idf(word)` comes from `doc_freq` (documents holding it, documents in all).
pub fn feedback_terms(
    query_words: &[String],
    texts: &[Vec<String>],
    mut doc_freq: impl FnMut(&str) -> Option<(u64, u64)>,
) -> Vec<(String, f32)> {
    let mut tf: std::collections::HashMap<&str, f32> = std::collections::HashMap::new();
    for words in texts {
        // Each record's words count by their share of it, so a long record does not dominate.
        let n = words.len().max(1) as f32;
        for w in words {
            *tf.entry(w.as_str()).or_default() += 1.0 / n;
        }
    }
    let mut weighed: Vec<(String, f32)> = tf
        .into_iter()
        .filter(|(w, _)| w.len() > 2 && !w.chars().all(|c| c.is_ascii_digit()) && !query_words.iter().any(|q| q == w))
        .filter_map(|(w, tf)| {
            let (df, n) = doc_freq(w)?;
            // A word in one feedback record only and nowhere else is a name or a typo; a word
            // in most of the index says nothing.
            (df >= 2 && (df as f64) < n as f64 / 10.0)
                .then(|| (w.to_string(), tf * ((n as f32 + 1.0) / df as f32).ln()))
        })
        .collect();
    weighed.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    weighed.truncate(TERMS);
    let top = weighed.first().map_or(1.0, |t| t.1);
    weighed.into_iter().map(|(w, s)| (w, TERM_BOOST * s / top)).collect()
}

/// Rocchio's step: `query + β × mean(feedback)`, unit length (the query alone when there is no
/// feedback of its width).
pub fn rocchio(query: &[f32], feedback: &[Vec<f32>]) -> Vec<f32> {
    let fb: Vec<&Vec<f32>> = feedback.iter().filter(|v| v.len() == query.len()).collect();
    if fb.is_empty() {
        return query.to_vec();
    }
    let mut out = query.to_vec();
    for v in &fb {
        for (o, x) in out.iter_mut().zip(v.iter()) {
            *o += ROCCHIO_BETA * x / fb.len() as f32;
        }
    }
    let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        out.iter_mut().for_each(|x| *x /= norm);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_is_weak_when_the_vectors_find_nothing_close_or_the_indexes_disagree() {
        let list = |ids: &[u8], s: f32| ids.iter().map(|&i| (i, s)).collect::<Vec<_>>();
        let w = When::Weak;
        assert!(weak(w, &list(&[1, 2, 3], 9.0), &list(&[1, 2, 4], 0.7)).is_none(), "they agree and match well");
        let low = weak(w, &list(&[1, 2], 9.0), &list(&[1, 2], 0.3)).expect("weak");
        assert!(low.contains("0.30"), "{low}");
        assert!(weak(When::Disagreement, &list(&[1, 2], 9.0), &list(&[1, 2], 0.3)).is_none(), "low alone");
        let apart = weak(When::Disagreement, &list(&[1, 2, 3], 9.0), &list(&[4, 5, 6], 0.8)).expect("weak");
        assert!(apart.contains("share 0"), "{apart}");
        // One lexical match that the vectors also found is all the agreement a list of one holds;
        // one they did not find is a disagreement.
        assert!(weak(w, &list(&[5], 9.0), &list(&[4, 5, 6], 0.8)).is_none(), "a short list that agrees");
        let lone = weak(w, &list(&[7], 9.0), &list(&[4, 5, 6], 0.8)).expect("weak");
        assert!(lone.contains("share 0"), "{lone}");
        assert!(weak(When::Never, &list(&[1], 9.0), &list(&[4], 0.1)).is_none());
        assert!(weak::<u8>(w, &list(&[1], 9.0), &[]).is_none(), "no vectors: nothing to expand against");
        assert_eq!(When::parse("disagreement"), Some(When::Disagreement));
        assert_eq!(When::parse("maybe"), None);
    }

    #[test]
    fn feedback_terms_are_the_rare_words_the_query_lacks_best_first() {
        let words = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        let texts = vec![words("token bucket limiter refills tokens"), words("bucket refills per tenant")];
        let df = |w: &str| Some((if w == "per" { 60 } else { 3 }, 100));
        let terms = feedback_terms(&words("rate limiter"), &texts, df);
        let names: Vec<&str> = terms.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(names[..2], ["bucket", "refills"], "{terms:?}");
        assert!(!names.contains(&"limiter"), "the query's own words are not feedback");
        assert!(!names.contains(&"per"), "a word in most records says nothing");
        assert_eq!(terms[0].1, TERM_BOOST);
        assert!(terms.iter().all(|t| t.1 > 0.0 && t.1 <= TERM_BOOST));
    }

    #[test]
    fn rocchio_moves_the_query_towards_its_feedback_and_keeps_it_unit_length() {
        let q = vec![1.0, 0.0];
        let moved = rocchio(&q, &[vec![0.0, 1.0]]);
        assert!(moved[1] > 0.0 && moved[0] > moved[1], "{moved:?}");
        assert!((moved.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5);
        assert_eq!(rocchio(&q, &[vec![1.0]]), q, "feedback of another width is ignored");
    }
}
