//! Outcome detection: confidence that follows what later commits did to the code.
//!
//! `Memory::outcomes` (in `api/outcomes.rs`: the lock, the cursor file and the write) has
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

/// How a scan runs ([`crate::api::Memory::scan_options`] fills it from flags and git config).
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

/// The record ids a commit message's `Neo-Record:` trailers name (prefixes are resolved against
/// `known`; unknown or ambiguous ones are skipped).
fn trailer_ids(message: &str, known: &dyn Fn(&str) -> Vec<RecordId>) -> Vec<RecordId> {
    let mut out = Vec::new();
    for line in message.lines() {
        let Some(v) = line.trim().strip_prefix("Neo-Record:") else { continue };
        for p in v.split([',', ' ']).map(str::trim).filter(|p| p.len() >= 4) {
            if let [one] = known(p).as_slice() {
                if !out.contains(one) {
                    out.push(*one);
                }
            }
        }
    }
    out
}

fn day(t: Timestamp) -> i64 {
    t.0.div_euclid(86_400)
}

/// The commit a `git revert` message names.
fn reverted_commit(message: &str) -> Option<&str> {
    let i = message.find("This reverts commit ")?;
    let rest = &message[i + "This reverts commit ".len()..];
    let sha: &str = rest.split(|c: char| !c.is_ascii_hexdigit()).next()?;
    (sha.len() >= 7).then_some(sha)
}

struct Scan<'a> {
    store: &'a Store,
    memory_state: &'a State,
    /// The valid facts and attempts that anchors or suggestions make scannable, found once per
    /// scan rather than once per commit (trailers name their records themselves).
    watched: Vec<(RecordId, &'a Record)>,
    /// The time of the commit being read: outcome records are dated by their evidence.
    at: Timestamp,
    opts: &'a ScanOptions,
    state: ScanState,
    found: Vec<Evidence>,
}

/// (target, signal, delta, commit, paths, the commit's time)
pub type Evidence = (RecordId, &'static str, Milli, ObjectId, Vec<String>, Timestamp);

impl<'a> Scan<'a> {
    fn emit(&mut self, target: RecordId, signal: &'static str, delta: Milli, commit: ObjectId, paths: Vec<String>) {
        let at = self.at;
        self.found.push((target, signal, delta, commit, paths, at));
    }

    /// The records that could have influenced commit `c`: valid, written no later than it.
    fn live(&self, c: &CodeCommit) -> Vec<(RecordId, &'a Record)> {
        self.watched.iter().filter(|(_, r)| r.created_at <= c.time).copied().collect()
    }

    fn commit(&mut self, c: &CodeCommit) -> Result<()> {
        let store = self.store;
        self.at = c.time;
        let parent = c.parents.first().copied();
        let parent_tree = match parent {
            Some(p) => Some(store.tree_of(p)?),
            None => None,
        };
        let changes = diff::changes(store, parent_tree, c.tree)?;
        let live = self.live(c);
        self.anchors(c, parent, &changes, &live)?;
        self.suggestions(c, &changes, &live);
        self.trailers(c, parent, &changes)?;
        Ok(())
    }

    fn anchors(
        &mut self,
        c: &CodeCommit,
        parent: Option<ObjectId>,
        changes: &[diff::Change],
        live: &[(RecordId, &Record)],
    ) -> Result<()> {
        let store = self.store;
        // Start following anchors of records seen for the first time, catching up from the
        // anchor's own commit to this commit's parent when they differ.
        for (id, record) in live {
            let anchors = match &record.payload {
                Payload::Fact(f) => f.anchors.as_slice(),
                _ => &[],
            };
            for (i, a) in anchors.iter().enumerate() {
                let key = format!("{}#{i}", id.to_hex());
                if self.state.anchors.contains_key(&key) {
                    continue;
                }
                let mut pos = AnchorPos { path: a.path.clone(), lines: a.lines.map(|l| (l.start, l.end)), dead: false };
                let from = a.commit.as_deref().and_then(|h| ObjectId::from_hex(h.as_bytes()).ok());
                if let (Some(from), Some(parent)) = (from, parent) {
                    if from != parent && store.has_commit(from)? {
                        let (old, new) = (store.blob_at(from, &a.path)?, store.blob_at(parent, &a.path)?);
                        if old != new {
                            let moved = match (new, pos.lines) {
                                (None, _) => None,
                                (Some(_), None) => pos.lines,
                                (Some(_), Some((s, e))) => {
                                    let text = |b: Option<ObjectId>| -> Result<String> {
                                        Ok(match b {
                                            Some(b) => String::from_utf8(store.read_blob(b)?).unwrap_or_default(),
                                            None => String::new(),
                                        })
                                    };
                                    diff::follow_lines(s, e, &diff::hunks(&text(old)?, &text(new)?))
                                }
                            };
                            match (new, moved) {
                                (Some(_), Some(l)) => pos.lines = Some(l),
                                (Some(_), None) if pos.lines.is_none() => {}
                                _ => {
                                    pos.dead = true;
                                    self.emit(*id, "anchor-changed", ANCHOR_CHANGED, c.id, vec![a.path.clone()]);
                                }
                            }
                        }
                    }
                }
                self.state.anchors.insert(key, pos);
            }
        }
        let live_ids: HashSet<String> = live.iter().map(|(id, _)| id.to_hex()).collect();
        let mut broken = Vec::new();
        for (key, pos) in self.state.anchors.iter_mut().filter(|(_, p)| !p.dead) {
            let Some(change) = changes.iter().find(|ch| ch.old_path.as_deref() == Some(pos.path.as_str())) else {
                continue;
            };
            let record = key.split('#').next().unwrap_or("").to_string();
            let old_path = pos.path.clone();
            let followed = match (&change.new_path, pos.lines) {
                (None, _) => None,
                (Some(p), None) => Some((p.clone(), None)),
                (Some(p), Some((s, e))) => diff::follow_lines(s, e, &change.hunks).map(|l| (p.clone(), Some(l))),
            };
            match followed {
                Some((path, lines)) => {
                    pos.path = path;
                    pos.lines = lines;
                }
                None => {
                    pos.dead = true;
                    if live_ids.contains(&record) {
                        broken.push((record, old_path));
                    }
                }
            }
        }
        for (record, path) in broken {
            if let Some(id) = RecordId::from_hex(&record) {
                self.emit(id, "anchor-changed", ANCHOR_CHANGED, c.id, vec![path]);
            }
        }
        Ok(())
    }

    fn suggestions(&mut self, c: &CodeCommit, changes: &[diff::Change], live: &[(RecordId, &Record)]) {
        for (id, record) in live {
            let suggestion = match &record.payload {
                Payload::Fact(f) => f.suggestion.as_deref(),
                Payload::Attempt(a) => a.suggestion.as_deref(),
                _ => None,
            };
            let Some(s) = suggestion else { continue };
            let wanted = tokens(s);
            if wanted.len() < MIN_SUGGESTION_TOKENS {
                continue;
            }
            let hex = id.to_hex();
            if let Some(path) = self.state.accepted.get(&hex).cloned() {
                // Accepted before: was it removed again?
                let Some(ch) = changes.iter().find(|ch| ch.old_path.as_deref() == Some(path.as_str())) else {
                    continue;
                };
                let share = token_share(&wanted, &tokens(&ch.new_text));
                match &ch.new_path {
                    Some(p) if share >= PARTIAL_SHARE => {
                        self.state.accepted.insert(hex, p.clone());
                    }
                    _ => {
                        self.state.accepted.remove(&hex);
                        self.state.done.insert(format!("{hex}:regression"));
                        self.emit(*id, "regression", REGRESSION, c.id, vec![path]);
                    }
                }
                continue;
            }
            if self.state.done.contains(&format!("{hex}:regression")) {
                continue;
            }
            let best = changes
                .iter()
                .filter_map(|ch| {
                    let added = ch.added_lines().join("\n");
                    ch.new_path.as_ref().map(|p| (p.clone(), token_share(&wanted, &tokens(&added))))
                })
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
            match best {
                Some((path, share)) if share >= ACCEPT_SHARE => {
                    self.state.accepted.insert(hex, path.clone());
                    self.emit(*id, "accepted", SUGGESTION_ACCEPTED, c.id, vec![path]);
                }
                Some((path, share)) if share >= PARTIAL_SHARE && self.state.done.insert(format!("{hex}:modified")) => {
                    self.emit(*id, "modified", SUGGESTION_MODIFIED, c.id, vec![path]);
                }
                _ => {}
            }
        }
    }

    /// Files of `lang` in an import cycle in `tree` (at most [`MAX_GRAPH_FILES`] files are read).
    fn cycles(&self, tree: Option<ObjectId>, lang: health::Lang) -> Result<usize> {
        let Some(tree) = tree else { return Ok(0) };
        let store = self.store;
        let files: Vec<(String, ObjectId)> = store
            .diff_files(None, Some(tree))?
            .into_iter()
            .filter(|f| health::Lang::of(&f.path) == Some(lang))
            .filter_map(|f| f.new_blob.map(|b| (f.path, b)))
            .take(MAX_GRAPH_FILES)
            .collect();
        let names: HashSet<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
        let exists = |p: &str| names.contains(p);
        let mut graph = BTreeMap::new();
        for (path, blob) in &files {
            let text = String::from_utf8(store.read_blob(*blob)?).unwrap_or_default();
            graph.insert(path.clone(), health::imports(lang, path, &text, &exists));
        }
        Ok(health::files_in_cycles(&graph))
    }

    fn trailers(&mut self, c: &CodeCommit, parent: Option<ObjectId>, changes: &[diff::Change]) -> Result<()> {
        let store = self.store;
        // Earlier linked commits: reverted by this one, or one more commit survived.
        let touched: HashSet<&str> =
            changes.iter().flat_map(|ch| ch.old_path.iter().chain(ch.new_path.iter())).map(String::as_str).collect();
        let mut still = Vec::new();
        for mut p in std::mem::take(&mut self.state.pending) {
            let explicit = reverted_commit(&c.message).is_some_and(|sha| p.commit.starts_with(sha));
            let restored = p.before.iter().any(|(path, _)| touched.contains(path.as_str())) && {
                let mut all = true;
                for (path, blob) in &p.before {
                    let now = store.blob_at(c.id, path)?.map(|b| b.to_string());
                    if now != *blob {
                        all = false;
                        break;
                    }
                }
                all
            };
            let ids: Vec<RecordId> = p.records.iter().filter_map(|r| RecordId::from_hex(r)).collect();
            if explicit || restored {
                let paths: Vec<String> = p.before.iter().map(|(path, _)| path.clone()).collect();
                for id in ids {
                    self.emit(id, "regression", REGRESSION, c.id, paths.clone());
                }
                continue;
            }
            p.survived += 1;
            if p.survived >= self.opts.survive_commits {
                let paths: Vec<String> = p.before.iter().map(|(path, _)| path.clone()).collect();
                for id in ids {
                    self.emit(id, "accepted", TRAILER_ACCEPTED, c.id, paths.clone());
                }
                continue;
            }
            still.push(p);
        }
        self.state.pending = still;

        // This commit applies records: remember it, and compare code health before and after.
        let state = self.memory_state;
        let ids = trailer_ids(&c.message, &|p| state.ids_with_prefix(p));
        if ids.is_empty() {
            return Ok(());
        }
        let mut before = Vec::new();
        let mut verdict = 0;
        let mut measured = Vec::new();
        for ch in changes {
            for path in ch.old_path.iter().chain(ch.new_path.iter()) {
                if !before.iter().any(|(p, _): &(String, Option<String>)| p == path) {
                    let blob = match parent {
                        Some(parent) => store.blob_at(parent, path)?.map(|b| b.to_string()),
                        None => None,
                    };
                    before.push((path.clone(), blob));
                }
            }
            if let (Some(path), Some(_)) = (&ch.new_path, &ch.old_path) {
                if let Some(lang) = health::Lang::of(path) {
                    let v = health::verdict(health::measure(lang, &ch.old_text), health::measure(lang, &ch.new_text));
                    if v != 0 {
                        verdict += v;
                        measured.push(path.clone());
                    }
                }
            }
        }
        // Import cycles, per language the commit touched: more files in cycles is worse.
        let mut langs: Vec<health::Lang> =
            changes.iter().filter_map(|ch| ch.new_path.as_deref().and_then(health::Lang::of)).collect();
        langs.dedup();
        let parent_tree = match parent {
            Some(p) => Some(store.tree_of(p)?),
            None => None,
        };
        for lang in langs.into_iter().collect::<BTreeSet<_>>() {
            let (before_n, after_n) = (self.cycles(parent_tree, lang)?, self.cycles(Some(c.tree), lang)?);
            if before_n != after_n {
                verdict += if after_n > before_n { -1 } else { 1 };
                for path in changes.iter().filter_map(|ch| ch.new_path.as_ref()) {
                    if health::Lang::of(path) == Some(lang) && !measured.contains(path) {
                        measured.push(path.clone());
                    }
                }
            }
        }
        for id in &ids {
            match verdict.signum() {
                1 => self.emit(*id, "health-improved", HEALTH, c.id, measured.clone()),
                -1 => self.emit(*id, "health-regressed", Milli(-HEALTH.0), c.id, measured.clone()),
                _ => {}
            }
        }
        self.state.pending.push(Pending {
            commit: c.id.to_string(),
            records: ids.iter().map(|i| i.to_hex()).collect(),
            survived: 0,
            before,
        });
        Ok(())
    }
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
    let watched = memory_state
        .iter()
        .filter(|e| e.status == Status::Valid)
        .filter(|e| match &e.record.payload {
            Payload::Fact(f) => !f.anchors.is_empty() || f.suggestion.is_some(),
            Payload::Attempt(a) => a.suggestion.is_some(),
            _ => false,
        })
        .map(|e| (e.id, &e.record))
        .collect();
    let mut scan = Scan { store, memory_state, watched, at: Timestamp(0), opts, state, found: Vec::new() };
    let mut per_day: HashMap<(RecordId, i64), u32> = HashMap::new();
    let mut kept: Vec<Evidence> = Vec::new();
    let mut dropped = 0;
    let mut scanned = 0;
    let mut capped = false;
    let mut cursor = start.map(|s| s.to_string()).or(scan.state.cursor.clone());
    for c in commits {
        let saved = scan.state.clone();
        scan.found.clear();
        scan.commit(c)?;
        let mut batch = Vec::new();
        for f in std::mem::take(&mut scan.found) {
            let n = per_day.entry((f.0, day(c.time))).or_default();
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

    Ok(Detection { kept, state, dropped, scanned, capped, cursor })
}

/// The idempotency key of a piece of evidence: `target:commit:signal`.
pub fn key(f: &Evidence) -> String {
    format!("{}:{}:{}", f.0.to_hex(), f.3, f.1)
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

    #[test]
    fn trailers_and_revert_messages() {
        let id = RecordId([7; 32]);
        let known = |p: &str| if id.to_hex().starts_with(p) { vec![id] } else { vec![] };
        assert_eq!(trailer_ids("fix\n\nNeo-Record: 0707070707\nNeo-Record: ffff\n", &known), vec![id]);
        assert_eq!(
            reverted_commit("Revert \"x\"\n\nThis reverts commit 0123456789abcdef.\n"),
            Some("0123456789abcdef")
        );
        assert_eq!(reverted_commit("nothing"), None);
    }
}
