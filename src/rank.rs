//! PURE. The scoring both ranked searches share (recall over memory, and the Construct's pattern
//! search): how well a text matches a query from its lexical and vector scores, and how that
//! relevance is weighed against confidence, successes and age. Lower than both so neither has to
//! import the other.

/// Least cosine similarity for a record found only by vector search to count as a match
/// (all-MiniLM-L6-v2 puts unrelated sentences mostly below 0.2).
pub const MIN_SIMILARITY: f32 = 0.25;

/// Weight of the lexical match in hybrid relevance (the vector similarity has `1 - LEXICAL_WEIGHT`).
pub const LEXICAL_WEIGHT: f64 = 0.1;

/// How well a record matches the query, 0.0 to 1.0: with vectors, `0.9 × cosine + 0.1 × bm25 /
/// best bm25`; lexical only, `bm25 / best bm25`. (Equal-weight reciprocal-rank fusion was
/// measured first and lost to vector search alone on the recall fixture, as did a 0.3 lexical
/// weight: weak lexical matches on common words dilute it. See docs/recall.md.)
pub fn relevance(lexical: Option<f32>, best_lexical: f32, similarity: Option<f32>, semantic: bool) -> f64 {
    let lex = match lexical {
        Some(s) if best_lexical > 0.0 => f64::from(s / best_lexical),
        _ => 0.0,
    };
    if semantic {
        (1.0 - LEXICAL_WEIGHT) * f64::from(similarity.unwrap_or(0.0).max(0.0)) + LEXICAL_WEIGHT * lex
    } else {
        lex
    }
}

/// The ranking score (see the module docs): relevance weighted by confidence and successes, plus a
/// small recency term that only breaks near-ties.
pub fn score(relevance: f64, confidence: f64, successes: u32, age_days: f64) -> f64 {
    let success = 1.0 + 0.1 * (f64::from(successes) + 1.0).log2().min(3.0);
    relevance * (0.5 + confidence) * success + 0.02 * (-age_days.max(0.0) / 180.0).exp()
}
