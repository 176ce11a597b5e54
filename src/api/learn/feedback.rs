//! Implicit feedback: what the next question says about the last answer, read from the local
//! retrieval telemetry and written as ordinary outcome records.
//!
//! Two recalls in a row, less than [`WINDOW_SECS`] apart:
//! - the same question asked again (query embeddings at cosine [`REASK_COSINE`] or more; without
//!   vectors of one model, word overlap (Jaccard) [`REASK_WORDS`] or more) means the first
//!   answer did not help: each of its first [`REASKED_TOP`] relevant results gets `reasked`
//!   ([`REASKED`]), unless that fact was shown in an answer to another question that stood
//!   ([`Questions::stood`]): then it was off the point here, not wrong, and the re-ask is counted as spared;
//! - a new but related question (cosine from [`RELATED_COSINE`], words from [`RELATED_WORDS`],
//!   below the re-ask line, and a shared word that is not a stop word) means it did: the result the answer led with gets `helped`
//!   ([`HELPED`], one success);
//! - an unrelated question says nothing.
//!
//! Each outcome's key is `target:recall-<first event>-<second event>:signal`, so a rescan of the
//! same telemetry writes nothing twice; the evidence in the record is the two events' ids and
//! query hashes and the similarity, never the query text. The outcome scan's caps apply
//! (`neo.outcomes.maxPerScan` per run, `neo.outcomes.maxPerRecordPerDay`). Only facts of the
//! project memory are scored, as with outcome detection.

use crate::api::learn::telemetry::{self, Event};
use crate::api::memory::Memory;
use crate::record::{Kind, Milli, Outcome, Payload, Record, RecordId, Timestamp};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// The longest gap between two recalls that are read as one exchange.
pub const WINDOW_SECS: i64 = 600;
/// Cosine of two query embeddings from which the second is the first asked again.
pub const REASK_COSINE: f32 = 0.9;
/// Cosine from which the second question is related to the first. Measured with the model on
/// question pairs nobody here wrote: 80 pairs of SciFact claims that cite the same abstract
/// (related) against every other pair of them, and every pair of 80 CoSQA code-search queries
/// (unrelated questions of one narrow field, as a project's are). At 0.5, 2.7% of the unrelated
/// code questions passed; at 0.6, 0.7%, keeping 88% of the related pairs (docs/outcomes.md).
/// The two must also share a word that is not a stop word ([`Questions::share_a_word`]).
pub const RELATED_COSINE: f32 = 0.6;
/// The same lines on word overlap (Jaccard of the queries' word hashes), without vectors.
pub const REASK_WORDS: f32 = 0.6;
pub const RELATED_WORDS: f32 = 0.2;
/// How many of a re-asked answer's relevant results are lowered: its top five, as the recall
/// fixture's questions are judged (recall@5). Any of them may be what was in the way; the ones
/// that answered another question are spared. (Measured on the simulated year in
/// `tests/it/curation.rs`, with the model: lowering the first only, the curated year answered
/// one question of 63 fewer than a fresh memory; with the top five, as many. Without the sparing,
/// lowering the top three sank facts that answered their own questions below the stale line.)
pub const REASKED_TOP: usize = 5;
/// How many of a helped answer's results are credited: the one it led with. A success is strong
/// (it raises rank and keeps a fact from demotion), and a follow-up does not say which fact it
/// built on.
pub const HELPED_TOP: usize = 1;
/// Deltas: small, since a question asked again is weak evidence on its own.
pub const REASKED: Milli = Milli(-20);
pub const HELPED: Milli = Milli(20);

/// What the second recall says about the first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Signal {
    Reasked,
    Helped,
}

impl Signal {
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Reasked => "reasked",
            Signal::Helped => "helped",
        }
    }

    pub fn delta(self) -> Milli {
        match self {
            Signal::Reasked => REASKED,
            Signal::Helped => HELPED,
        }
    }
}

/// One piece of implicit evidence about one record.
#[derive(Clone, Debug, Serialize)]
pub struct Implicit {
    pub target: RecordId,
    pub signal: Signal,
    pub delta: f64,
    pub first: String,
    pub second: String,
    pub similarity: f32,
    /// `cosine` or `words`.
    pub by: &'static str,
    pub at: i64,
    pub key: String,
    /// False when the memory already held this evidence.
    pub new: bool,
}

/// What a feedback run did.
#[derive(Clone, Debug, Serialize)]
pub struct FeedbackReport {
    /// Pairs of recalls read as one exchange.
    pub exchanges: usize,
    pub outcomes: Vec<Implicit>,
    /// Re-asks not held against a fact because it was shown in an answer to another question
    /// that stood.
    pub spared: usize,
    /// Dropped by the per-record daily cap, or left for the next run by the per-run cap.
    pub dropped: usize,
    pub capped: bool,
    pub dry_run: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_commit: Option<String>,
}

/// The telemetry's questions, decoded once: each recall's query vector and word set, and how
/// each recall relates to the one after it. Judging a pair from the events themselves decoded both
/// vectors from hex and rebuilt both word sets every time, and the sparing rule judges a re-asked
/// question against every answer that stood with the fact it would lower: a fact shown in many
/// answers paid that for each of them.
pub struct Questions<'a> {
    pub events: &'a [Event],
    vectors: Vec<Option<Vec<f32>>>,
    words: Vec<HashSet<u32>>,
    /// `next[i]`: when recall `i + 1` follows recall `i` within the window, how alike they are.
    next: Vec<Option<(f32, &'static str)>>,
}

impl<'a> Questions<'a> {
    pub fn new(events: &'a [Event]) -> Questions<'a> {
        let mut q = Questions {
            events,
            vectors: events.iter().map(|e| e.vector.as_deref().and_then(telemetry::dequantise)).collect(),
            words: events.iter().map(|e| e.words.iter().copied().collect()).collect(),
            next: Vec::new(),
        };
        q.next =
            (1..events.len()).map(|j| follows(&events[j - 1], &events[j]).then(|| q.similarity(j - 1, j))).collect();
        q
    }

    /// How alike the questions of recalls `i` and `j` are, and by what measure: cosine of the
    /// query vectors when both have one of the same model, else word overlap (Jaccard).
    pub fn similarity(&self, i: usize, j: usize) -> (f32, &'static str) {
        let (a, b) = (&self.events[i], &self.events[j]);
        if let (Some(x), Some(y), Some(ma), Some(mb)) = (&self.vectors[i], &self.vectors[j], &a.model, &b.model) {
            if ma == mb && x.len() == y.len() {
                return (crate::embed::cosine(x, y), "cosine");
            }
        }
        if a.query_hash == b.query_hash {
            return (1.0, "words");
        }
        let (sa, sb) = (&self.words[i], &self.words[j]);
        let union = sa.union(sb).count();
        let j = if union == 0 { 0.0 } else { sa.intersection(sb).count() as f32 / union as f32 };
        (j, "words")
    }

    fn judge(&self, i: usize, j: usize) -> Option<Signal> {
        let (sim, by) = self.similarity(i, j);
        match judge(sim, by) {
            // A follow-up helps only when it is about the same thing in words too: questions of
            // one project sit close in the model's space whatever they ask.
            Some(Signal::Helped) if !self.share_a_word(i, j) => None,
            s => s,
        }
    }

    /// Whether the questions of recalls `i` and `j` share a word that is not a stop word (the
    /// same question asked again always does).
    pub fn share_a_word(&self, i: usize, j: usize) -> bool {
        self.events[i].query_hash == self.events[j].query_hash || !self.words[i].is_disjoint(&self.words[j])
    }

    /// Whether recall `i + 1` asked the question of recall `i` again.
    fn repeated(&self, i: usize) -> bool {
        self.next.get(i).copied().flatten().is_some_and(|(sim, by)| judge(sim, by) == Some(Signal::Reasked))
    }

    /// The answers that stood, as indices into the events (oldest first): recalls whose question
    /// was not asked again within the window. A repeat that led with the same result as the
    /// question it repeats does not stand either: getting the same answer again and stopping says
    /// as little as giving up. This is evidence of use, the kind plain retrieval is not (a fact
    /// shown beside the answer, or leading a wrong one, is retrieved too): curation keeps facts by
    /// the answers they led (`api/learn/curate.rs`), and a fact shown in an answer that stood is not
    /// lowered because another question was asked again after it led ([`read_exchanges`]).
    pub fn stood(&self) -> Vec<usize> {
        let events = self.events;
        (0..events.len())
            .filter(|&i| lead(&events[i]).is_some())
            .filter(|&i| !self.repeated(i))
            .filter(|&i| i == 0 || !(self.repeated(i - 1) && lead(&events[i - 1]) == lead(&events[i])))
            .collect()
    }
}

/// The signal a follow-up gives, if any.
pub fn judge(sim: f32, by: &str) -> Option<Signal> {
    let (reask, related) = if by == "cosine" { (REASK_COSINE, RELATED_COSINE) } else { (REASK_WORDS, RELATED_WORDS) };
    if sim >= reask {
        Some(Signal::Reasked)
    } else if sim >= related {
        Some(Signal::Helped)
    } else {
        None
    }
}

/// Whether `b` follows `a` closely enough to be read as one exchange.
fn follows(a: &Event, b: &Event) -> bool {
    b.at >= a.at && b.at - a.at <= WINDOW_SECS
}

/// The result a recall led with: its first relevant one.
fn lead(e: &Event) -> Option<&str> {
    e.results.iter().find(|r| r.relevant()).map(|r| r.id.as_str())
}

/// Every piece of implicit evidence in `events` (oldest first) about the ids `scored` accepts,
/// and how many re-asks were set aside because the fact they would lower was shown in an answer
/// that stood, to another question (it was off the point there, not wrong: without this, a
/// simulated year's re-asks pushed facts that answered their own questions every month below the
/// stale line). Any fact of such an answer counts, not only its first: the one that answered may
/// be any of them (sparing only answers' first facts left recall@5 in that year one question
/// lower with the model, two with the test embedder).
pub fn read_exchanges(
    questions: &Questions<'_>,
    stood: &[usize],
    scored: &dyn Fn(&str) -> Option<RecordId>,
) -> (usize, Vec<Implicit>, usize) {
    let events = questions.events;
    // Every fact shown in an answer that stood: any of them may be what answered it.
    let mut answered: HashMap<&str, Vec<usize>> = HashMap::new();
    for &i in stood {
        for r in events[i].results.iter().filter(|r| r.relevant()) {
            answered.entry(r.id.as_str()).or_default().push(i);
        }
    }
    let mut exchanges = 0;
    let mut spared = 0;
    let mut out = Vec::new();
    for (k, pair) in events.windows(2).enumerate() {
        let (a, b) = (&pair[0], &pair[1]);
        let Some((sim, by)) = questions.next[k] else { continue };
        let relevant = || a.results.iter().filter(|r| r.relevant());
        if !relevant().any(|r| scored(&r.id).is_some()) {
            continue;
        }
        exchanges += 1;
        let Some(signal) = judge(sim, by) else { continue };
        let n = if signal == Signal::Reasked { REASKED_TOP } else { HELPED_TOP };
        for target in relevant().take(n).filter_map(|r| scored(&r.id)) {
            if signal == Signal::Reasked {
                let hex = target.to_hex();
                let elsewhere = answered
                    .get(hex.as_str())
                    .is_some_and(|stood| stood.iter().any(|&i| questions.judge(i, k) != Some(Signal::Reasked)));
                if elsewhere {
                    spared += 1;
                    continue;
                }
            }
            out.push(Implicit {
                target,
                signal,
                delta: signal.delta().as_f64(),
                first: a.id.clone(),
                second: b.id.clone(),
                similarity: sim,
                by,
                at: b.at,
                key: format!("{}:recall-{}-{}:{}", target.to_hex(), a.id, b.id, signal.as_str()),
                new: true,
            });
        }
    }
    (exchanges, out, spared)
}

impl Memory {
    /// The outcome record for one piece of implicit evidence.
    pub(crate) fn implicit_record(&self, f: &Implicit, author: String, events: &HashMap<&str, &Event>) -> Record {
        let hash = |id: &str| events.get(id).map(|e| e.query_hash.clone()).unwrap_or_default();
        let gap = match (events.get(f.first.as_str()), events.get(f.second.as_str())) {
            (Some(a), Some(b)) => b.at - a.at,
            _ => 0,
        };
        let verdict = match f.signal {
            Signal::Reasked => "the same question asked again: the first answer did not help",
            Signal::Helped => "a new, related question: the first answer helped",
        };
        let body = format!(
            "Recall `{}` (query hash `{}`) was followed {gap} s later by recall `{}` (query hash `{}`); \
             similarity {:.2} by {}: {verdict}.\n",
            f.first,
            hash(&f.first),
            f.second,
            hash(&f.second),
            f.similarity,
            f.by
        );
        let at = Timestamp(f.at)
            .max(self.state().entries.get(&f.target).map(|e| e.record.created_at).unwrap_or(Timestamp(0)));
        Record {
            kind: Kind::Outcome,
            payload: Payload::Outcome(Outcome {
                target: f.target,
                signal: f.signal.as_str().to_string(),
                delta: f.signal.delta(),
                commits: Vec::new(),
                paths: Vec::new(),
                key: f.key.clone(),
            }),
            author,
            created_at: at,
            body,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::learn::telemetry::{Candidates, Front, Returned};

    fn stood(events: &[Event]) -> Vec<usize> {
        Questions::new(events).stood()
    }

    fn event(at: i64, query: &str, ids: &[&str]) -> Event {
        let results = ids
            .iter()
            .enumerate()
            .map(|(i, id)| Returned {
                id: id.to_string(),
                rank: i as u32 + 1,
                layer: "facts".into(),
                scope: "project".into(),
            })
            .collect();
        Event::new(Timestamp(at), Front::Mcp, query, false, None, Candidates::default(), results, 10, 1.0, vec![])
    }

    #[test]
    fn a_question_asked_again_lowers_and_a_related_one_raises() {
        let id = RecordId::of_bytes(b"x");
        let hex = id.to_hex();
        let other = RecordId::of_bytes(b"o").to_hex();
        let scored = |h: &str| (h == hex).then_some(id);
        let events = vec![
            event(0, "how do we retry payments", &[&hex]),
            event(60, "how do we retry payments again", &[&hex]),
            event(120, "payments retry backoff jitter limits", &[&other]),
            // Too late, and unrelated: nothing.
            event(5_000, "release checklist", &[&other]),
        ];
        let (exchanges, found, spared) = read_exchanges(&Questions::new(&events), &stood(&events), &scored);
        assert_eq!((exchanges, spared), (2, 0));
        let signals: Vec<Signal> = found.iter().map(|f| f.signal).collect();
        assert_eq!(signals, vec![Signal::Reasked, Signal::Helped]);
        assert!(found[0].key.ends_with(":reasked") && found[0].key.starts_with(&hex));
        // The same telemetry read twice gives the same keys.
        let (_, again, _) = read_exchanges(&Questions::new(&events), &stood(&events), &scored);
        assert_eq!(found.iter().map(|f| &f.key).collect::<Vec<_>>(), again.iter().map(|f| &f.key).collect::<Vec<_>>());
    }

    #[test]
    fn a_fact_that_answered_another_question_is_not_lowered_by_a_reask() {
        let (x, y) = (RecordId::of_bytes(b"x"), RecordId::of_bytes(b"y"));
        let (hx, hy) = (x.to_hex(), y.to_hex());
        let scored = |h: &str| RecordId::from_hex(h);
        let events = vec![
            // x answers its own question: not asked again.
            event(0, "where do refunds get processed", &[&hx]),
            // x leads the answer to another question, which is asked again: x was off the point;
            // y, shown beside it and in no answer that stood, is lowered.
            event(5_000, "which compiler version do we use", &[&hx, &hy]),
            event(5_030, "which compiler version do we use", &[&hx, &hy]),
            // y leads an answer asked again: it is lowered again.
            event(9_000, "how long are tokens valid", &[&hy]),
            event(9_030, "how long are tokens valid", &[&hy]),
        ];
        // The repeats that led with the same result do not stand; the first question does.
        assert_eq!(stood(&events), vec![0]);
        let (_, found, spared) = read_exchanges(&Questions::new(&events), &stood(&events), &scored);
        assert_eq!(spared, 1);
        let lowered: Vec<(RecordId, Signal)> = found.iter().map(|f| (f.target, f.signal)).collect();
        assert_eq!(lowered, vec![(y, Signal::Reasked), (y, Signal::Reasked)]);
        // A related follow-up credits only the fact the answer led with.
        let events = vec![
            event(0, "how do we retry payments", &[&hx, &hy]),
            event(60, "payments retry backoff jitter limits", &[]),
        ];
        let (_, found, _) = read_exchanges(&Questions::new(&events), &stood(&events), &scored);
        let credited: Vec<(RecordId, Signal)> = found.iter().map(|f| (f.target, f.signal)).collect();
        assert_eq!(credited, vec![(x, Signal::Helped)]);
        // A repeat that led with something else stands: the second answer may have helped.
        let events = vec![event(0, "tokens valid", &[&hy]), event(30, "tokens valid", &[&hx])];
        assert_eq!(stood(&events), vec![1]);
        // Shown second in an answer that stood is enough: it may be what answered.
        let events = vec![
            event(0, "where do refunds get processed", &[&hx, &hy]),
            event(9_000, "how long are tokens valid", &[&hy]),
            event(9_030, "how long are tokens valid", &[&hy]),
        ];
        let (_, found, spared) = read_exchanges(&Questions::new(&events), &stood(&events), &scored);
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(spared, 1);
    }

    #[test]
    fn cosine_decides_when_both_have_vectors_of_one_model() {
        let mut a = event(0, "alpha", &[]);
        let mut b = event(1, "omega", &[]);
        a.vector = Some(telemetry::quantise(&[1.0, 0.0]));
        b.vector = Some(telemetry::quantise(&[0.96, 0.28]));
        a.model = Some("m".into());
        b.model = Some("m".into());
        let (s, by) = Questions::new(&[a, b]).similarity(0, 1);
        assert_eq!(by, "cosine");
        assert!(s > 0.95, "{s}");
        assert_eq!(judge(s, by), Some(Signal::Reasked));
        assert_eq!(judge(0.7, "cosine"), Some(Signal::Helped));
        assert_eq!(judge(0.3, "cosine"), None);
    }
}
