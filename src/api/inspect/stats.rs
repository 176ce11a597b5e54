//! `git neo stats`: what the local retrieval telemetry says about recall, beside the size of
//! every scope's memory. Read-only: nothing here writes.

use crate::api::learn::telemetry::Event;
use crate::record::RecordId;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// The value at `p` (0..=1) of sorted `v`, by nearest rank; 0 when empty.
pub fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// Latency percentiles, in milliseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Latency {
    pub fn of(mut v: Vec<f64>) -> Latency {
        v.sort_by(f64::total_cmp);
        Latency {
            p50: percentile(&v, 0.5),
            p90: percentile(&v, 0.9),
            p99: percentile(&v, 0.99),
            max: v.last().copied().unwrap_or(0.0),
        }
    }
}

/// A fact and how often recall returned it for its relevance.
#[derive(Clone, Debug, Serialize)]
pub struct Retrieved {
    pub id: String,
    pub scope: String,
    pub subject: String,
    pub retrievals: usize,
    pub successes: u32,
    pub confidence: f64,
    /// Whole days since a person last confirmed it, or since it was written.
    pub unconfirmed_days: u32,
}

/// One scope's memory by type.
#[derive(Clone, Debug, Serialize)]
pub struct ScopeSize {
    pub scope: String,
    /// Current (valid) facts by type.
    pub facts: BTreeMap<String, usize>,
    pub current_facts: usize,
    pub attempts: usize,
    /// Every record, whatever its kind and status.
    pub records: usize,
    /// `neo.curate.cap.<scope>`.
    pub cap: usize,
}

/// What `git neo stats` reports.
#[derive(Clone, Debug, Serialize)]
pub struct Stats {
    /// Whether telemetry is on, and whether it keeps query text.
    pub telemetry: bool,
    pub queries_kept: bool,
    pub recalls: usize,
    pub by_front: BTreeMap<String, usize>,
    /// Times of the first and last recall kept (seconds since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<i64>,
    pub latency_ms: Latency,
    /// Share of recalls that returned at least one relevant fact, attempt or known unknown.
    pub hit_rate: f64,
    pub mean_tokens: f64,
    /// Current facts most often retrieved, most first (at most 10).
    pub most_retrieved: Vec<Retrieved>,
    /// Current constraints: shown by every recall whatever it asks, so never "never retrieved".
    pub constraints_shown: usize,
    /// Current facts (constraints aside) never retrieved while telemetry was kept (count, and
    /// the 10 oldest).
    pub never_retrieved: usize,
    pub never_retrieved_oldest: Vec<Retrieved>,
    /// Current facts retrieved at least `neo.curate.demoteAfter` times without a success.
    pub unhelpful: Vec<Retrieved>,
    pub demote_after: u64,
    /// Current facts (constraints aside) that have gone longest without a person confirming them
    /// (at most 10, longest first), and how many have gone [`crate::recall::UNCONFIRMED_NOTE_DAYS`]
    /// or more.
    pub longest_unconfirmed: Vec<Retrieved>,
    pub unconfirmed_long: usize,
    pub scopes: Vec<ScopeSize>,
}

/// How often each record was retrieved for its relevance in `events` (from `scope` only, when
/// given).
pub fn retrievals(events: &[Event], scope: Option<&str>) -> HashMap<RecordId, usize> {
    let mut n: HashMap<RecordId, usize> = HashMap::new();
    for e in events {
        for r in e.results.iter().filter(|r| r.relevant() && scope.is_none_or(|s| r.scope == s)) {
            if let Some(id) = RecordId::from_hex(&r.id) {
                *n.entry(id).or_default() += 1;
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&[7.0], 0.9), 7.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
