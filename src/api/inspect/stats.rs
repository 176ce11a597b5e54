//! `git neo stats`: what the local retrieval telemetry says about recall, beside the size of
//! every scope's memory. Read-only: nothing here writes.

use crate::api::telemetry::{self, Event};
use crate::api::Session;
use crate::config::CurateSettings;
use crate::error::Result;
use crate::record::{Kind, Payload, RecordId};
use crate::state::Status;
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

impl Session {
    /// Recall telemetry and memory sizes (see the module docs).
    pub fn stats(&mut self) -> Result<Stats> {
        let project = self.project_store()?;
        let settings = telemetry::Settings::from_config(&|k| project.config_value(k))?;
        let curate = CurateSettings::from_config(&|k| project.config_value(k))?;
        let events = if settings.on { telemetry::read(&project.caches()) } else { Vec::new() };
        let counts = retrievals(&events, None);
        let now = self.now();

        let mut by_front: BTreeMap<String, usize> = BTreeMap::new();
        for e in &events {
            *by_front.entry(e.front.as_str().to_string()).or_default() += 1;
        }
        let hits = events.iter().filter(|e| e.hit()).count();
        let recalls = events.len();
        let mut stats = Stats {
            telemetry: settings.on,
            queries_kept: settings.queries,
            recalls,
            by_front,
            since: events.first().map(|e| e.at),
            until: events.last().map(|e| e.at),
            latency_ms: Latency::of(events.iter().map(|e| e.latency_ms).collect()),
            hit_rate: if recalls == 0 { 0.0 } else { hits as f64 / recalls as f64 },
            mean_tokens: if recalls == 0 {
                0.0
            } else {
                events.iter().map(|e| e.tokens as f64).sum::<f64>() / recalls as f64
            },
            most_retrieved: Vec::new(),
            longest_unconfirmed: Vec::new(),
            unconfirmed_long: 0,
            constraints_shown: 0,
            never_retrieved: 0,
            never_retrieved_oldest: Vec::new(),
            unhelpful: Vec::new(),
            demote_after: curate.demote_after,
            scopes: Vec::new(),
        };

        let mut current = Vec::new();
        for scope in self.places().readable()? {
            let Ok(memory) = self.memory_of(&scope) else { continue };
            let mut size = ScopeSize {
                scope: scope.to_string(),
                facts: BTreeMap::new(),
                current_facts: 0,
                attempts: 0,
                records: memory.state().entries.len(),
                cap: curate.cap(scope.default_area()),
            };
            for e in memory.state().iter().filter(|e| e.status == Status::Valid) {
                match &e.record.payload {
                    Payload::Fact(f) => {
                        *size.facts.entry(f.fact_type.to_string()).or_default() += 1;
                        size.current_facts += 1;
                        if f.fact_type == crate::record::FactType::Constraint {
                            stats.constraints_shown += 1;
                            continue;
                        }
                        current.push((
                            e.record.created_at,
                            Retrieved {
                                retrievals: counts.get(&e.id).copied().unwrap_or(0),
                                id: e.id.to_hex(),
                                scope: scope.to_string(),
                                subject: f.subject.clone(),
                                successes: e.successes,
                                confidence: e.confidence.as_f64(),
                                unconfirmed_days: e.unconfirmed_days(now),
                            },
                        ));
                    }
                    _ if e.record.kind == Kind::Attempt => size.attempts += 1,
                    _ => {}
                }
            }
            stats.scopes.push(size);
        }
        let mut most: Vec<&Retrieved> = current.iter().map(|(_, r)| r).filter(|r| r.retrievals > 0).collect();
        most.sort_by(|a, b| b.retrievals.cmp(&a.retrievals).then(a.id.cmp(&b.id)));
        stats.most_retrieved = most.iter().take(10).map(|r| (*r).clone()).collect();
        stats.unhelpful = most
            .iter()
            .filter(|r| r.retrievals as u64 >= curate.demote_after && r.successes == 0)
            .map(|r| (*r).clone())
            .collect();
        let mut unchecked: Vec<&Retrieved> = current.iter().map(|(_, r)| r).collect();
        unchecked.sort_by(|a, b| b.unconfirmed_days.cmp(&a.unconfirmed_days).then(a.id.cmp(&b.id)));
        stats.unconfirmed_long =
            unchecked.iter().filter(|r| r.unconfirmed_days >= crate::recall::UNCONFIRMED_NOTE_DAYS).count();
        stats.longest_unconfirmed = unchecked.iter().take(10).map(|r| (*r).clone()).collect();
        if settings.on {
            let mut never: Vec<&(crate::record::Timestamp, Retrieved)> =
                current.iter().filter(|(_, r)| r.retrievals == 0).collect();
            never.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.id.cmp(&b.1.id)));
            stats.never_retrieved = never.len();
            stats.never_retrieved_oldest = never.iter().take(10).map(|(_, r)| r.clone()).collect();
        }
        Ok(stats)
    }
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
