//! PURE. Measuring retrieval: all candidates ranked by score alone (no layers, no budget) and
//! recall@k / MRR over labelled queries, as the quality tests and benchmarks use them.

use super::*;

/// Which candidate lists a flat ranking uses (for measuring retrieval quality).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Lexical,
    Vector,
    Hybrid,
}

/// All candidates ranked by score alone (no layers, no budget): what quality metrics measure.
pub fn rank_flat(
    state: &State,
    lexical: &[(RecordId, f32)],
    vector: &[(RecordId, f32)],
    mode: Mode,
    now: Timestamp,
) -> Vec<RecordId> {
    let lexical = if mode == Mode::Vector { &[][..] } else { lexical };
    let vector = if mode == Mode::Lexical { &[][..] } else { vector };
    let ranks = ranks_of(lexical, vector);
    let best_lexical = lexical.first().map(|(_, s)| *s).unwrap_or(0.0);
    let fusion = Fusion::new(FusionKind::default(), "", best_lexical, mode != Mode::Lexical);
    let mut scored: Vec<(f64, RecordId)> = ranks
        .iter()
        .filter_map(|(id, r)| {
            let e = state.entries.get(id)?;
            let age = (now.0 - e.record.created_at.0) as f64 / 86_400.0;
            Some((
                score(
                    fusion.relevance(r.bm25, r.lexical, r.similarity, r.vector),
                    e.confidence.as_f64(),
                    e.successes,
                    age,
                ),
                *id,
            ))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(_, id)| id).collect()
}

/// recall@k and mean reciprocal rank of `ranked` lists against `expected` ids (one list per query).
pub fn metrics(ranked: &[Vec<RecordId>], expected: &[Vec<RecordId>], k: usize) -> (f64, f64) {
    let n = ranked.len().max(1) as f64;
    let mut hits = 0.0;
    let mut rr = 0.0;
    for (r, want) in ranked.iter().zip(expected) {
        if r.iter().take(k).any(|id| want.contains(id)) {
            hits += 1.0;
        }
        if let Some(pos) = r.iter().position(|id| want.contains(id)) {
            rr += 1.0 / (pos as f64 + 1.0);
        }
    }
    (hits / n, rr / n)
}
