//! `git neo report`: the data of the static HTML page ([`crate::report`] renders it): memory size
//! over time per type and per scope (from the records on each scope's ref: when each fact was
//! written and when a later record superseded, outdated or forgot it), confidence trajectories
//! of the facts outcomes moved most, supersession chains, recall latency and hit rate from the
//! local telemetry, and what the last curation did. Read-only.

use crate::api::learn::telemetry;
use crate::error::Result;
use crate::record::{Kind, Payload, RecordId};
use crate::report::{Chart, CurationRow, Series, Version};
use crate::state::{Entry, State, Status};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Points per size-over-time series.
pub const SIZE_POINTS: usize = 40;
/// Facts whose confidence trajectories are drawn, at most.
pub const TRAJECTORIES: usize = 6;
/// Supersession chains drawn, at most (the longest).
pub const CHAINS: usize = 10;
/// Recalls whose latency is drawn (the latest).
pub const LATENCY_POINTS: usize = 300;
/// Days of hit rate drawn (the latest).
pub const HIT_RATE_DAYS: usize = 90;

/// A fact's life: its scope, its type, when it was written and when it stopped being current.
pub(crate) struct Life {
    pub(crate) scope: String,
    pub(crate) fact_type: String,
    pub(crate) start: i64,
    pub(crate) end: Option<i64>,
}

/// When a fact stopped being current: the earliest record that superseded, outdated or forgot it.
pub(crate) fn ended(e: &Entry, state: &State) -> Option<i64> {
    if e.status == Status::Valid {
        return None;
    }
    let at = |id: &RecordId| state.entries.get(id).map(|x| x.record.created_at.0);
    e.superseded_by.iter().chain(e.retracted_by.iter()).filter_map(at).min().or(Some(e.record.created_at.0))
}

/// `n` evenly spaced times from `t0` to `t1` (one when they are equal).
pub fn sample_times(t0: i64, t1: i64, n: usize) -> Vec<i64> {
    if t1 <= t0 || n < 2 {
        return vec![t0];
    }
    (0..n).map(|i| t0 + ((t1 - t0) as i128 * i as i128 / (n as i128 - 1)) as i64).collect()
}

/// The chains of facts replaced by facts (oldest first), the longest `limit`.
pub(crate) fn chains(state: &State, limit: usize) -> Vec<Vec<Version>> {
    let mut next: HashMap<RecordId, (RecordId, String)> = HashMap::new();
    let mut has_prev: HashSet<RecordId> = HashSet::new();
    for e in state.iter().filter(|e| e.status == Status::Valid) {
        if let Payload::Supersession(s) = &e.record.payload {
            if let Some(new) = s.new {
                if state.entries.get(&s.old).is_some_and(|o| o.record.kind == Kind::Fact) {
                    next.entry(s.old).or_insert((new, s.reason.clone()));
                    has_prev.insert(new);
                }
            }
        }
    }
    let mut out: Vec<Vec<Version>> = Vec::new();
    let mut starts: Vec<&RecordId> = next.keys().filter(|id| !has_prev.contains(id)).collect();
    starts.sort();
    for start in starts {
        let mut chain = Vec::new();
        let mut cur = Some((*start, String::new()));
        let mut seen = HashSet::new();
        while let Some((id, _)) = cur.take() {
            if !seen.insert(id) {
                break;
            }
            let Some(e) = state.entries.get(&id) else { break };
            let step = next.get(&id).cloned();
            chain.push(Version {
                id: id.short(),
                at: e.record.created_at.0,
                subject: e.record.summary(),
                reason: step.as_ref().map(|(_, r)| r.clone()).unwrap_or_default(),
            });
            cur = step;
        }
        if chain.len() > 1 {
            out.push(chain);
        }
    }
    out.sort_by(|a, b| b.len().cmp(&a.len()).then(b.last().map(|v| v.at).cmp(&a.last().map(|v| v.at))));
    out.truncate(limit);
    out
}

/// A fact's confidence on the code's calendar: each counted step at its evidence's commit, the
/// start at the commit the fact was anchored at (a fact recorded today about an old checkout has
/// a history of years, not of the hours since it was written).
pub(crate) fn trajectory(
    memory: &crate::api::memory::Memory,
    e: &crate::state::Entry,
    subject: &str,
) -> Result<Series> {
    // On the code's calendar: each step at its evidence's commit, the start at
    // the commit the fact was anchored at (a fact recorded today about an old
    // checkout has a history of years, not of the hours since it was written).
    let explained = memory.explain(&e.id.to_hex())?;
    let store = memory.store();
    let commit_time = |hex: Option<&String>| {
        hex.and_then(|h| crate::store::ObjectId::from_hex(h.as_bytes()).ok())
            .and_then(|c| store.commit_time(c).ok())
            .map(|t| t.0)
    };
    let start = crate::outcomes::anchor_commit(e)
        .and_then(|c| store.commit_time(c).ok())
        .map_or(e.record.created_at.0, |t| t.0.min(e.record.created_at.0));
    let mut steps: Vec<(i64, f64)> = explained
        .steps
        .iter()
        .filter(|s| s.counted)
        .map(|s| (commit_time(s.commits.first()).unwrap_or(s.at.0).max(start), s.delta))
        .collect();
    // In the order the evidence happened (records written together fold by id).
    steps.sort_by_key(|s| s.0);
    let mut running = explained.initial;
    let mut points = vec![(start, explained.initial)];
    for (x, delta) in steps {
        running += delta;
        points.push((x, running.clamp(0.0, 1.0)));
    }
    let name: String = format!("{} {}", e.id.short(), subject).chars().take(48).collect();
    Ok(Series { name, points })
}

/// The charts and the summary line read from the local recall telemetry: latency of the latest
/// recalls and the hit rate per day.
pub(crate) fn telemetry_charts(
    events: &[telemetry::Event],
    on: bool,
    summary: &mut Vec<(String, String)>,
) -> Vec<Chart> {
    let mut charts = Vec::new();
    let latest = &events[events.len().saturating_sub(LATENCY_POINTS)..];
    charts.push(Chart {
        id: "latency".into(),
        step: false,
        title: format!("Recall latency (the last {} recalls)", latest.len()),
        y_label: "ms".into(),
        y_max: None,
        series: vec![Series { name: "latency".into(), points: latest.iter().map(|e| (e.at, e.latency_ms)).collect() }],
        empty: telemetry_empty(on).into(),
    });
    let mut days: BTreeMap<i64, (usize, usize)> = BTreeMap::new();
    for e in events {
        let d = days.entry(e.at.div_euclid(86_400)).or_default();
        d.0 += 1;
        d.1 += usize::from(e.hit());
    }
    let skip = days.len().saturating_sub(HIT_RATE_DAYS);
    charts.push(Chart {
        id: "hit-rate".into(),
        step: false,
        title: "Recall hit rate per day (share returning a relevant record)".into(),
        y_label: "hit rate".into(),
        y_max: Some(1.0),
        series: vec![Series {
            name: "hit rate".into(),
            points: days.iter().skip(skip).map(|(d, (n, h))| (d * 86_400, *h as f64 / *n as f64)).collect(),
        }],
        empty: telemetry_empty(on).into(),
    });
    if !events.is_empty() {
        let stats = crate::api::inspect::stats::Latency::of(events.iter().map(|e| e.latency_ms).collect());
        let hits = events.iter().filter(|e| e.hit()).count();
        summary.push((
            "recalls kept".into(),
            format!(
                "{} (p50 {:.1} ms, p90 {:.1} ms; {:.0}% returned a fact, attempt or known unknown matching the question)",
                events.len(),
                stats.p50,
                stats.p90,
                hits as f64 * 100.0 / events.len() as f64
            ),
        ));
    } else if !on {
        summary.push(("recalls kept".into(), "none: telemetry is off (neo.telemetry)".into()));
    }

    charts
}

/// What the recall charts say when no recall was kept.
fn telemetry_empty(on: bool) -> &'static str {
    if on {
        "No recall kept yet: every `git neo recall`, prompt hook and MCP recall adds a point."
    } else {
        "Telemetry is off (neo.telemetry), so no recall is kept."
    }
}

/// The last curation's summary line and rows, from the file `git neo curate` keeps.
pub(crate) fn last_curation(path: &std::path::Path) -> Option<(String, Vec<CurationRow>)> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let s = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or_default().to_string();
    let list = |k: &str| v.get(k).and_then(|x| x.as_array()).cloned().unwrap_or_default();
    let short = |id: String| id.chars().take(12).collect::<String>();
    let mut rows = Vec::new();
    for d in list("demoted") {
        rows.push(CurationRow {
            action: "demoted".into(),
            id: short(s(&d, "id")),
            subject: s(&d, "subject"),
            detail: format!(
                "retrieved {} times without a success",
                d.get("retrievals").and_then(|x| x.as_u64()).unwrap_or(0)
            ),
        });
    }
    for (k, action) in [("pruned", "pruned"), ("evicted", "evicted")] {
        for d in list(k) {
            rows.push(CurationRow {
                action: action.into(),
                id: short(s(&d, "id")),
                subject: s(&d, "subject"),
                detail: s(&d, "reason"),
            });
        }
    }
    for d in list("synthesized") {
        let n = d.get("members").and_then(|m| m.as_array()).map(Vec::len).unwrap_or(0);
        rows.push(CurationRow {
            action: "synthesised".into(),
            id: short(s(&d, "central")),
            subject: s(&d, "subject"),
            detail: format!("{n} near-duplicates merged into one"),
        });
    }
    let nothing = if rows.is_empty() { "; nothing needed changing" } else { "" };
    let head = format!(
        "{} on the {} memory: {} current facts before, {} after (cap {}){}{nothing}",
        s(&v, "at"),
        s(&v, "scope"),
        v.get("before").and_then(|x| x.as_u64()).unwrap_or(0),
        v.get("after").and_then(|x| x.as_u64()).unwrap_or(0),
        v.get("cap").and_then(|x| x.as_u64()).unwrap_or(0),
        if v.get("proposed").and_then(|x| x.as_bool()).unwrap_or(false) { ", proposed for review" } else { "" }
    );
    Some((head, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_times_span_the_range() {
        assert_eq!(sample_times(0, 90, 4), vec![0, 30, 60, 90]);
        assert_eq!(sample_times(5, 5, 40), vec![5]);
    }
}
