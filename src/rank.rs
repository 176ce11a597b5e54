//! PURE. The scoring both ranked searches share (recall over memory, and the Construct's pattern
//! search): how well a text matches a query from its lexical and vector scores (the fusion of
//! the two candidate lists, [`Fusion`]), and how that relevance is weighed against confidence,
//! successes and age. Lower than both so neither has to import the other.

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

/// How recall combines its lexical and vector candidate lists into one relevance (`git config
/// neo.recall.fusion`; docs/recall.md has the measurements that chose the default).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FusionKind {
    /// `(1 - w) × cosine + w × bm25 / best bm25`, `w` fixed ([`LEXICAL_WEIGHT`] by default).
    Weighted(f64),
    /// A convex combination of min-max normalised scores: `(1 - w) × (cos - worst) / (best -
    /// worst) + w × (bm25 - worst) / (best - worst)`, each side over its own candidate list.
    Convex(f64),
    /// Reciprocal-rank fusion: `1/(60 + lexical rank) + 1/(60 + vector rank)`, scaled to 0..1.
    Rrf,
    /// [`FusionKind::Weighted`] with a weight read from the query's shape: an identifier-like
    /// query (`parse_config`, `fooBar`, `a::b`, a short run of code words) leans lexical, a
    /// question or a long sentence leans on the vectors.
    Adaptive,
}

impl FusionKind {
    /// Parse a configuration value: `weighted`, `weighted:W`, `convex:W` (0 ≤ W ≤ 1), `rrf`,
    /// `adaptive`.
    pub fn parse(value: &str) -> Option<FusionKind> {
        match value.trim().to_ascii_lowercase().as_str() {
            "weighted" => Some(FusionKind::Weighted(LEXICAL_WEIGHT)),
            "rrf" => Some(FusionKind::Rrf),
            "adaptive" => Some(FusionKind::Adaptive),
            v => {
                let (name, w) = v.split_once(':')?;
                let w: f64 = w.parse().ok().filter(|w| (0.0..=1.0).contains(w))?;
                match name {
                    "weighted" => Some(FusionKind::Weighted(w)),
                    "convex" => Some(FusionKind::Convex(w)),
                    _ => None,
                }
            }
        }
    }
}

impl Default for FusionKind {
    fn default() -> Self {
        FusionKind::Weighted(LEXICAL_WEIGHT)
    }
}

/// The lexical weight [`FusionKind::Adaptive`] gives `query`.
pub fn adaptive_weight(query: &str) -> f64 {
    let words: Vec<&str> = query.split_whitespace().collect();
    let code_like = |w: &&str| {
        w.contains('_')
            || w.contains("::")
            || w.contains('(')
            || w.contains('.') && !w.ends_with('.')
            || w.chars().skip(1).any(char::is_uppercase) && w.chars().any(char::is_lowercase)
    };
    let question = query.trim_end().ends_with('?')
        || words.first().is_some_and(|w| {
            ["how", "what", "why", "when", "where", "which", "who", "does", "do", "is", "can", "should"]
                .contains(&w.to_ascii_lowercase().as_str())
        });
    if words.iter().any(code_like) {
        0.5
    } else if question || words.len() > 12 {
        LEXICAL_WEIGHT
    } else if words.len() <= 4 {
        0.3
    } else {
        0.2
    }
}

/// One query's fusion: the kind, and what it normalises by (each list's best and worst score).
#[derive(Clone, Copy, Debug)]
pub struct Fusion {
    kind: FusionKind,
    /// The lexical weight, for the weighted kinds.
    weight: f64,
    best_lexical: f32,
    /// What the weighted kinds measure BM25 from ([`Fusion::with_lexical_floor`]): 0, or the
    /// last candidate's score when the lexical list was cut at its limit.
    lexical_floor: f32,
    semantic: bool,
    /// (worst BM25, best cosine, worst cosine) of the candidate lists, for [`FusionKind::Convex`].
    ranges: (f32, f32, f32),
}

impl Fusion {
    /// The fusion for `query` whose lexical list's best score is `best_lexical`; `semantic` is
    /// false when there is no vector list (then relevance is the lexical side alone).
    pub fn new(kind: FusionKind, query: &str, best_lexical: f32, semantic: bool) -> Fusion {
        let weight = match kind {
            FusionKind::Weighted(w) | FusionKind::Convex(w) => w,
            FusionKind::Adaptive => adaptive_weight(query),
            FusionKind::Rrf => 0.0,
        };
        Fusion { kind, weight, best_lexical, lexical_floor: 0.0, semantic, ranges: (0.0, 1.0, 0.0) }
    }

    /// With the lists' other ends, which [`FusionKind::Convex`] normalises by: the worst BM25
    /// of the lexical list and the best and worst cosine of the vector list.
    pub fn with_ranges(self, worst_lexical: f32, best_cosine: f32, worst_cosine: f32) -> Fusion {
        Fusion { ranges: (worst_lexical, best_cosine, worst_cosine), ..self }
    }

    /// With the score a record outside the lexical list reaches at most: the last candidate's
    /// when the list was cut at its limit (records that match less well were left out), 0 when
    /// it holds every match. The weighted kinds then read BM25 as `(bm25 - floor) / (best -
    /// floor)`: how far above the records not found a candidate stands, rather than its share
    /// of the best score, which a query of common words gives every weak match in proportion.
    /// (Measured in docs/recall.md: SciFact train nDCG@10 0.7279 to 0.7351, CoSQA dev MRR@10
    /// 0.5188 to 0.5205, both with the same weight 0.1.)
    pub fn with_lexical_floor(self, floor: f32) -> Fusion {
        Fusion { lexical_floor: floor.clamp(0.0, self.best_lexical.max(0.0)), ..self }
    }

    pub fn kind(&self) -> FusionKind {
        self.kind
    }

    /// The lexical weight this query got (0 for reciprocal-rank fusion).
    pub fn weight(&self) -> f64 {
        self.weight
    }

    /// How well a candidate matches, 0.0 to 1.0, from its BM25 score and rank in the lexical list
    /// and its cosine similarity and rank in the vector list (each absent when it is not there).
    pub fn relevance(
        &self,
        bm25: Option<f32>,
        lexical_rank: Option<usize>,
        cosine: Option<f32>,
        vector_rank: Option<usize>,
    ) -> f64 {
        if !self.semantic {
            return relevance(bm25, self.best_lexical, None, false);
        }
        match self.kind {
            FusionKind::Convex(w) => {
                let (worst_lex, best_cos, worst_cos) = self.ranges;
                let norm = |x: Option<f32>, lo: f32, hi: f32| match x {
                    Some(x) if hi > lo => f64::from(((x - lo) / (hi - lo)).clamp(0.0, 1.0)),
                    Some(_) => 1.0,
                    None => 0.0,
                };
                (1.0 - w) * norm(cosine, worst_cos, best_cos) + w * norm(bm25, worst_lex, self.best_lexical)
            }
            FusionKind::Rrf => {
                let rr = |r: Option<usize>| r.map_or(0.0, |r| 1.0 / (61.0 + r as f64));
                (rr(lexical_rank) + rr(vector_rank)) * 61.0 / 2.0
            }
            FusionKind::Weighted(_) | FusionKind::Adaptive => {
                let (floor, best) = (self.lexical_floor, self.best_lexical);
                let lex = match bm25 {
                    Some(s) if best > floor => f64::from(((s - floor) / (best - floor)).clamp(0.0, 1.0)),
                    Some(s) if best > 0.0 && s >= best => 1.0,
                    _ => 0.0,
                };
                (1.0 - self.weight) * f64::from(cosine.unwrap_or(0.0).max(0.0)) + self.weight * lex
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_kinds_parse_and_refuse_what_they_do_not_know() {
        assert_eq!(FusionKind::parse("weighted"), Some(FusionKind::Weighted(LEXICAL_WEIGHT)));
        assert_eq!(FusionKind::parse(" RRF "), Some(FusionKind::Rrf));
        assert_eq!(FusionKind::parse("weighted:0.3"), Some(FusionKind::Weighted(0.3)));
        assert_eq!(FusionKind::parse("weighted:1.5"), None);
        assert_eq!(FusionKind::parse("convex:0.4"), Some(FusionKind::Convex(0.4)));
        assert_eq!(FusionKind::parse("rrf:0.4"), None);
        assert_eq!(FusionKind::parse("borda"), None);
    }

    #[test]
    fn the_adaptive_weight_leans_lexical_for_identifiers_and_on_vectors_for_questions() {
        assert_eq!(adaptive_weight("parse_config"), 0.5);
        assert_eq!(adaptive_weight("where is parseConfig called"), 0.5);
        assert_eq!(adaptive_weight("how do retries behave under load?"), LEXICAL_WEIGHT);
        assert!(adaptive_weight("retry budget") > adaptive_weight("the retry budget of the billing service workers"));
    }

    #[test]
    fn a_cut_lexical_list_is_measured_from_its_last_score() {
        // BM25 10 best, 6 last of a list cut at its limit: 8 is half-way, 6 is no better than
        // what was left out; without the floor 8 would count as 0.8 of the best.
        let f = Fusion::new(FusionKind::default(), "q", 10.0, true).with_lexical_floor(6.0);
        let lex = |s: f32| (f.relevance(Some(s), Some(1), Some(0.5), Some(1)) - 0.9 * 0.5) / LEXICAL_WEIGHT;
        assert!((lex(10.0) - 1.0).abs() < 1e-9 && (lex(8.0) - 0.5).abs() < 1e-9 && lex(6.0).abs() < 1e-9);
        let whole = Fusion::new(FusionKind::default(), "q", 10.0, true);
        assert!((whole.relevance(Some(8.0), Some(1), Some(0.5), Some(1)) - (0.45 + 0.08)).abs() < 1e-6);
        // A floor at the best (every candidate scored the same) leaves the best a full match.
        let flat = Fusion::new(FusionKind::default(), "q", 5.0, true).with_lexical_floor(5.0);
        assert!((flat.relevance(Some(5.0), Some(0), None, None) - LEXICAL_WEIGHT).abs() < 1e-9);
    }

    #[test]
    fn every_fusion_ranks_a_match_on_both_lists_first_and_stays_within_zero_and_one() {
        for kind in [FusionKind::default(), FusionKind::Rrf, FusionKind::Adaptive, FusionKind::Convex(0.5)] {
            let f = Fusion::new(kind, "retry budget", 10.0, true).with_ranges(1.0, 0.8, 0.2);
            let both = f.relevance(Some(10.0), Some(0), Some(0.8), Some(0));
            let lexical = f.relevance(Some(10.0), Some(0), None, None);
            let vector = f.relevance(None, None, Some(0.8), Some(1));
            assert!(both > lexical && both > vector, "{kind:?}");
            assert!((0.0..=1.0).contains(&both), "{kind:?}: {both}");
        }
        let lexical_only = Fusion::new(FusionKind::Rrf, "q", 4.0, false);
        assert_eq!(lexical_only.relevance(Some(2.0), Some(3), None, None), 0.5, "no vectors: BM25 / best");
    }
}
