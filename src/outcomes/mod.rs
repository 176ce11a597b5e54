//! Outcome detection: confidence that follows what later commits did to the code.
//!
//! `Memory::outcomes` (in `api/learn/outcomes.rs`: the lock, the cursor file and the write) has
//! [`detect`] walk the first-parent chain of a branch from a cursor (kept in
//! `.git/neo/outcomes/<branch>.json`, with the derived tracking state below), diffs each commit
//! against its first parent ([`diff`]), reads the signals, and writes outcome records through the
//! same write path as every other record, in one commit per scan. Every outcome carries the
//! idempotency key `target:commit:signal`; the fold counts a key once, and a scan skips keys the
//! memory already holds, so scanning again, or on another clone, never counts evidence twice.
//!
//! Signals and deltas (docs/outcomes.md gives the reasoning):
//! - `anchor-changed` (−0.1, and the record needs review): the anchored lines were rewritten or
//!   deleted, or the file was deleted. Edits elsewhere move the anchor; a rename moves its path.
//! - `accepted` (+0.2, one success): a commit's added lines contain the record's `suggestion`
//!   (at least [`ACCEPT_SHARE`] of its tokens); `modified` (−0.05, once): at least
//!   [`PARTIAL_SHARE`]; `regression` (−0.3): the accepted lines were later removed again (less than
//!   [`PARTIAL_SHARE`] of the suggestion left in the file).
//! - Trailers: a commit saying `Neo-Record: <id>` applied that record. A `git revert` of it, or a
//!   later commit that restores every file it touched to its previous content, is a `regression`
//!   (−0.3); surviving `neo.outcomes.surviveCommits` (default 10) later commits is `accepted`
//!   (+0.1, one success).
//! - Code health ([`health`]) of the files a trailer-linked commit changed: `health-improved`
//!   (+0.05) or `health-regressed` (−0.05).
//! - Checks: a recheck that fails where it passed is a `regression` (written by `recheck`).
//!
//! Caps: at most `neo.outcomes.maxPerScan` (default 100) outcomes per scan (the scan stops before
//! the commit that would pass it and the next scan goes on from there: evidence is deferred, not
//! lost) and `neo.outcomes.maxPerRecordPerDay` (default 3) per record per commit day (the rest are
//! dropped and counted in the report).

pub mod diff;
pub mod health;
mod scan;
pub mod suggest;

pub use scan::Evidence;
use scan::{day, Scan};

use crate::error::Result;
use crate::record::{Milli, Payload, Record, RecordId, Timestamp};
use crate::state::{State, Status};
use crate::store::ObjectId;
use crate::store::{CodeCommit, Store};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Share of a suggestion's tokens a commit must add for `accepted`.
pub const ACCEPT_SHARE: f64 = 0.9;
/// Share for `modified` (and below which an accepted suggestion counts as removed again).
pub const PARTIAL_SHARE: f64 = 0.5;
/// Suggestions with fewer tokens are too short to recognise and are ignored.
pub const MIN_SUGGESTION_TOKENS: usize = 3;

/// Deltas, in thousandths.
pub const ANCHOR_CHANGED: Milli = Milli(-100);
pub const SUGGESTION_ACCEPTED: Milli = Milli(200);
pub const SUGGESTION_MODIFIED: Milli = Milli(-50);
pub const REGRESSION: Milli = Milli(-300);
pub const TRAILER_ACCEPTED: Milli = Milli(100);
pub const HEALTH: Milli = Milli(50);

/// The most source files of one language read to build an import graph.
pub const MAX_GRAPH_FILES: usize = 5_000;

/// The most commits one scan walks.
pub const MAX_COMMITS: usize = 1_000_000;

/// How a scan runs (`crate::api::memory::Memory::scan_options` fills it from flags and git config).
#[derive(Clone, Debug)]
pub struct ScanOptions {
    /// The branch, for the cursor's name (`main`, or `HEAD` when detached).
    pub branch: String,
    /// Its tip.
    pub tip: ObjectId,
    /// Scan the commits after this one instead of after the cursor.
    pub since: Option<ObjectId>,
    pub max_per_scan: usize,
    pub max_per_record_per_day: u32,
    pub survive_commits: u32,
}

impl ScanOptions {
    pub const DEFAULT_MAX_PER_SCAN: usize = crate::config::OutcomeCaps::DEFAULT.max_per_scan;
    pub const DEFAULT_MAX_PER_RECORD_PER_DAY: u32 = crate::config::OutcomeCaps::DEFAULT.max_per_record_per_day;
    pub const DEFAULT_SURVIVE_COMMITS: u32 = crate::config::OutcomeCaps::DEFAULT.survive_commits;
}

/// Where an anchor is now.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
struct AnchorPos {
    path: String,
    lines: Option<(u32, u32)>,
    dead: bool,
}

/// A trailer-linked commit waiting to be reverted or to survive.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Pending {
    commit: String,
    records: Vec<String>,
    survived: u32,
    /// Each file it touched, and the blob it had before (`None`: the commit added it).
    before: Vec<(String, Option<String>)>,
}

/// The scan's tracking state (saved between scans by the use case): derived, rebuildable by scanning again from `--since`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ScanState {
    pub cursor: Option<String>,
    /// `<record>#<anchor index>` -> position.
    anchors: BTreeMap<String, AnchorPos>,
    pending: Vec<Pending>,
    /// Records whose suggestion was accepted -> the file holding it.
    accepted: BTreeMap<String, String>,
    /// `<record>:<signal>` for one-time signals already given.
    done: BTreeSet<String>,
}

/// One outcome a scan found.
#[derive(Clone, Debug, Serialize)]
pub struct Found {
    pub target: RecordId,
    pub signal: &'static str,
    pub delta: f64,
    pub commit: String,
    pub paths: Vec<String>,
    /// False when the memory already held this evidence (nothing written for it).
    pub new: bool,
    /// Why the commit is this evidence (which lines, and why they count).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub why: String,
}

/// A fact anchored at a commit the scanned branch does not contain.
#[derive(Clone, Debug, Serialize)]
pub struct OffBranch {
    pub id: RecordId,
    pub commit: String,
}

/// What a scan did.
#[derive(Clone, Debug, Serialize)]
pub struct ScanReport {
    pub branch: String,
    pub commits: usize,
    pub outcomes: Vec<Found>,
    /// Outcomes dropped by the per-record daily cap.
    pub dropped: usize,
    /// True when the per-scan cap stopped the scan early; run it again to go on.
    pub capped: bool,
    /// The last commit scanned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Facts whose anchors were taken at a commit that is not an ancestor of the scanned tip (a
    /// branch not merged, or history rewritten): they are scanned from the time they were written
    /// instead, and a person should re-anchor them (`git neo confirm`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub off_branch: Vec<OffBranch>,
    /// The commit on the memory ref holding the new outcome records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_commit: Option<String>,
}

/// Code tokens: identifiers, keywords and numbers (words inside string literals included).
/// Punctuation and whitespace are left out: every language shares them, so they would make
/// unrelated lines look alike, and formatting must not matter.
pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).map(str::to_string).collect()
}

/// The share of `wanted`'s tokens (as a multiset) found in `have`.
pub fn token_share(wanted: &[String], have: &[String]) -> f64 {
    if wanted.is_empty() {
        return 0.0;
    }
    let mut pool: HashMap<&str, usize> = HashMap::new();
    for t in have {
        *pool.entry(t.as_str()).or_default() += 1;
    }
    let found = wanted
        .iter()
        .filter(|t| match pool.get_mut(t.as_str()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        })
        .count();
    found as f64 / wanted.len() as f64
}

/// What [`detect`] found: the evidence kept under the caps, and where the scan stopped.
pub struct Detection {
    pub kept: Vec<Evidence>,
    /// The tracking state to save once the outcomes are on the ref.
    pub state: ScanState,
    pub dropped: usize,
    pub scanned: usize,
    pub capped: bool,
    pub cursor: Option<String>,
    /// Records whose anchor commit is not an ancestor of the scanned tip, with that commit.
    pub off_branch: Vec<(RecordId, String)>,
}

/// Read `commits` (oldest first) for evidence about the valid records of `memory_state` that
/// anchors or suggestions make scannable, applying both caps; `existing` holds the idempotency
/// keys the memory already has, which do not count towards the per-scan cap.
pub fn detect(
    store: &Store,
    memory_state: &State,
    opts: &ScanOptions,
    state: ScanState,
    start: Option<ObjectId>,
    commits: &[CodeCommit],
    existing: &HashSet<String>,
) -> Result<Detection> {
    let watched: Vec<(RecordId, &Record)> = memory_state
        .iter()
        .filter(|e| e.status == Status::Valid)
        .filter(|e| match &e.record.payload {
            Payload::Fact(f) => !e.anchors().is_empty() || f.suggestion.is_some(),
            Payload::Attempt(a) => a.suggestion.is_some(),
            _ => false,
        })
        .map(|e| (e.id, &e.record))
        .collect();
    let (from, off_branch) = anchored_from(store, memory_state, opts.tip, commits, &watched)?;
    let mut scan =
        Scan { store, memory_state, watched, from, at: Timestamp(0), opts, state, found: Vec::new(), rarity: None };
    let mut per_day: HashMap<(RecordId, i64), u32> = HashMap::new();
    let mut kept: Vec<Evidence> = Vec::new();
    let mut dropped = 0;
    let mut scanned = 0;
    let mut capped = false;
    let mut cursor = start.map(|s| s.to_string()).or(scan.state.cursor.clone());
    for (index, c) in commits.iter().enumerate() {
        let saved = scan.state.clone();
        scan.found.clear();
        scan.commit(c, index)?;
        let mut batch: Vec<Evidence> = Vec::new();
        for f in std::mem::take(&mut scan.found) {
            // One event per key: two anchors of one fact broken by one commit are one event.
            let k = key(&f);
            if let Some(b) = batch.iter_mut().find(|b| key(b) == k) {
                for p in f.paths {
                    if !b.paths.contains(&p) {
                        b.paths.push(p);
                    }
                }
                if !f.why.is_empty() && !b.why.contains(&f.why) {
                    b.why = format!("{}; {}", b.why, f.why);
                }
                continue;
            }
            let n = per_day.entry((f.target, day(c.time))).or_default();
            if *n >= opts.max_per_record_per_day {
                dropped += 1;
                continue;
            }
            *n += 1;
            batch.push(f);
        }
        let new_count = batch.iter().filter(|f| !existing.contains(&key(f))).count();
        let so_far = kept.iter().filter(|f| !existing.contains(&key(f))).count();
        if so_far + new_count > opts.max_per_scan && so_far > 0 {
            // Stop before this commit: the next scan starts here, so nothing is lost.
            scan.state = saved;
            capped = true;
            break;
        }
        kept.extend(batch);
        scanned += 1;
        cursor = Some(c.id.to_string());
    }
    let mut state = scan.state;
    state.cursor = cursor.clone();

    Ok(Detection { kept, state, dropped, scanned, capped, cursor, off_branch })
}

/// From which commit on a watched record can be evidence about: the commit its anchors were
/// taken at (stored in the record), else the time it was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum From {
    /// Live for the commits after this position in the scanned chain.
    After(usize),
    /// Its anchor commit is older than every scanned commit: live for all of them.
    Before,
    /// No anchor commit on this branch: live for commits no older than this time.
    Time(Timestamp),
}

/// The anchor commit of a fact: its current anchors' (a fact's anchors are taken at one HEAD;
/// the last is used if they differ), a confirmation's when a person re-anchored it.
pub fn anchor_commit(entry: &crate::state::Entry) -> Option<ObjectId> {
    entry.anchors().iter().rev().filter_map(|a| a.commit.as_deref()).find_map(|h| ObjectId::from_hex(h.as_bytes()).ok())
}

/// Each watched record's [`From`], and the records whose anchor commit is not an ancestor of
/// `tip` (they are scanned by time, and the report says so).
/// Records anchored off the scanned branch, with their anchor commit.
type OffBranchList = Vec<(RecordId, String)>;

fn anchored_from(
    store: &Store,
    memory_state: &State,
    tip: ObjectId,
    commits: &[CodeCommit],
    watched: &[(RecordId, &Record)],
) -> Result<(HashMap<RecordId, From>, OffBranchList)> {
    let position: HashMap<ObjectId, usize> = commits.iter().enumerate().map(|(i, c)| (c.id, i)).collect();
    let mut from = HashMap::new();
    let mut off_branch = Vec::new();
    // Facts share anchor commits (many are written at one HEAD): each is asked about once.
    let mut on_branch: HashMap<ObjectId, bool> = HashMap::new();
    for (id, record) in watched {
        let f = match memory_state.entries.get(id).and_then(anchor_commit) {
            None => From::Time(record.created_at),
            Some(a) => match position.get(&a) {
                Some(&i) => From::After(i),
                None => {
                    let on = match on_branch.get(&a) {
                        Some(v) => *v,
                        None => {
                            let v = store.has_commit(a)? && store.is_ancestor(a, tip)?;
                            on_branch.insert(a, v);
                            v
                        }
                    };
                    if on {
                        From::Before
                    } else {
                        off_branch.push((*id, a.to_string()));
                        From::Time(record.created_at)
                    }
                }
            },
        };
        from.insert(*id, f);
    }
    Ok((from, off_branch))
}

/// The idempotency key of a piece of evidence: `target:commit:signal`, and `@confirmation` for
/// evidence about a confirmation's anchors.
pub fn key(f: &Evidence) -> String {
    match &f.generation {
        Some(g) => format!("{}:{}:{}@{g}", f.target.to_hex(), f.commit, f.signal),
        None => format!("{}:{}:{}", f.target.to_hex(), f.commit, f.signal),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_shares() {
        assert_eq!(tokens("let x = foo(1); // \"bar\""), vec!["let", "x", "foo", "1", "bar"]);
        let s = tokens("retry(3, backoff, jitter)");
        assert_eq!(token_share(&s, &tokens("  retry( 3,backoff,\n jitter )\n")), 1.0);
        // retry and 3 are kept; backoff and jitter are not: 2 of 4.
        assert!((token_share(&s, &tokens("retry(3, linear)")) - 0.5).abs() < 1e-9);
        assert_eq!(token_share(&[], &s), 0.0);
    }
}
