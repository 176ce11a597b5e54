//! Use cases: `git neo outcomes` (scan new commits for evidence and write outcome records, one
//! commit per scan) and `git neo explain` (how a confidence came to be). Detection itself is
//! [`crate::outcomes`]; this module owns the scan's lock, its cursor file and the write.

use crate::api::memory::Memory;
use crate::api::write::WriteContext;
use crate::error::{Error, Result};
use crate::outcomes::{detect, key, Detection, Found, ScanOptions, ScanReport, ScanState, MAX_COMMITS};
use crate::record::{Kind, Milli, Outcome, Payload, Record, RecordId, Timestamp};
use crate::state::Status;
use crate::store::ObjectId;
use serde::Serialize;
use std::collections::HashSet;

impl Memory {
    /// The options of a scan of `branch` (default: the current branch, or `HEAD` when detached)
    /// after `since` (default: the branch's cursor), with the caps from git config.
    pub fn scan_options(&self, branch: Option<&str>, since: Option<&str>) -> Result<ScanOptions> {
        let store = self.store();
        let name = match branch {
            Some(b) => b.trim().to_string(),
            None => store.current_branch().unwrap_or_else(|| "HEAD".into()),
        };
        let tip_spec = if branch.is_some() { format!("refs/heads/{name}") } else { "HEAD".to_string() };
        let tip = store.resolve_commit(&tip_spec).map_err(|_| {
            Error::invalid(
                "branch",
                format!("{tip_spec} does not name a commit here; commit something first or name a branch"),
            )
        })?;
        let since = since.map(|s| store.resolve_commit(s)).transpose()?;
        let caps = store.outcome_caps()?;
        Ok(ScanOptions {
            branch: name,
            tip,
            since,
            max_per_scan: caps.max_per_scan,
            max_per_record_per_day: caps.max_per_record_per_day,
            survive_commits: caps.survive_commits,
        })
    }

    /// Without a cursor, commits before every record cannot be evidence about them: the
    /// chain starts after the first anchor commit it holds, or at the first commit no older
    /// than the first record without one (a fact recorded today about an old checkout is
    /// scanned from that checkout, not from today).
    fn trim_to_anchored(&self, commits: &mut Vec<crate::store::CodeCommit>) {
        // One pass over the records: the anchor commits the chain holds, and the earliest
        // record without one.
        let chain: HashSet<ObjectId> = commits.iter().map(|c| c.id).collect();
        let mut anchored: HashSet<ObjectId> = HashSet::new();
        let mut unanchored_since = None;
        for e in self.state().iter() {
            match crate::outcomes::anchor_commit(e).filter(|a| chain.contains(a)) {
                Some(a) => {
                    anchored.insert(a);
                }
                None => {
                    let t = e.record.created_at;
                    unanchored_since = Some(unanchored_since.map_or(t, |u: crate::record::Timestamp| u.min(t)));
                }
            }
        }
        let after_anchor = commits.iter().position(|c| anchored.contains(&c.id)).map(|i| i + 1);
        let by_time = unanchored_since.and_then(|t| commits.iter().position(|c| c.time >= t));
        match after_anchor.into_iter().chain(by_time).min() {
            Some(i) => {
                commits.drain(..i);
            }
            None => commits.clear(),
        }
    }

    /// One scan per branch at a time (hooks of quick successive commits can overlap): an OS lock,
    /// released when the process ends, however it ends.
    fn scan_lock(&self, branch: &str) -> Result<std::fs::File> {
        let lock_path = self.store().caches().outcomes_lock(branch);
        let io = |e| Error::Io { context: format!("locking {}", lock_path.display()), source: e };
        std::fs::create_dir_all(lock_path.parent().expect("has a parent")).map_err(io)?;
        let lock = std::fs::File::create(&lock_path).map_err(io)?;
        if let Err(std::fs::TryLockError::WouldBlock) = lock.try_lock() {
            return Err(Error::Busy(format!(
                "another outcome scan of {branch} is running; it will cover these commits"
            )));
        }
        Ok(lock)
    }

    /// Scan the branch's commits not yet scanned and write the outcomes found (see the module
    /// docs). The cursor and tracking state are saved only after the outcomes are on the ref.
    pub fn outcomes(&mut self, opts: &ScanOptions, ctx: &WriteContext) -> Result<ScanReport> {
        let path = self.store().caches().outcomes_state(&opts.branch);
        let _lock = self.scan_lock(&opts.branch)?;
        let mut state: ScanState =
            std::fs::read(&path).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
        let start = match opts.since {
            Some(s) => Some(s),
            None => state.cursor.as_deref().and_then(|h| ObjectId::from_hex(h.as_bytes()).ok()),
        };
        if opts.since.is_some() {
            state = ScanState::default();
        }
        let store = self.store();
        let mut commits = store.first_parent_chain(opts.tip, start, MAX_COMMITS)?;
        if start.is_none() {
            self.trim_to_anchored(&mut commits);
        }
        let existing: HashSet<String> = self
            .state()
            .iter()
            .filter_map(|e| match &e.record.payload {
                Payload::Outcome(o) => Some(o.key.clone()),
                _ => None,
            })
            .collect();

        let found = detect(self.store(), self.state(), opts, state, start, &commits, &existing)?;
        let Detection { kept, state, dropped, scanned, capped, cursor, off_branch } = found;
        let mut state = state;
        state.cursor = cursor.clone();

        let mut report = ScanReport {
            branch: opts.branch.clone(),
            commits: scanned,
            outcomes: Vec::new(),
            dropped,
            capped,
            cursor,
            off_branch: off_branch.into_iter().map(|(id, commit)| crate::outcomes::OffBranch { id, commit }).collect(),
            memory_commit: None,
        };
        let mut records = Vec::new();
        let mut seen = HashSet::new();
        for f in &kept {
            let k = key(f);
            let new = !existing.contains(&k) && seen.insert(k.clone());
            report.outcomes.push(Found {
                target: f.target,
                signal: f.signal,
                delta: f.delta.as_f64(),
                commit: f.commit.to_string(),
                paths: f.paths.clone(),
                new,
                why: f.why.clone(),
            });
            if new {
                records.push(Record {
                    kind: Kind::Outcome,
                    payload: Payload::Outcome(Outcome {
                        target: f.target,
                        signal: f.signal.to_string(),
                        delta: f.delta,
                        commits: vec![f.commit.to_string()],
                        paths: f.paths.clone(),
                        key: k,
                    }),
                    author: ctx.identity.author_field(),
                    // Dated by the evidence (the commit), never before the record it is about:
                    // explain and history then list outcomes in the order things happened.
                    created_at: f
                        .at
                        .max(self.state().entries.get(&f.target).map(|e| e.record.created_at).unwrap_or(f.at)),
                    body: if f.why.is_empty() { String::new() } else { format!("{}\n", f.why) },
                });
            }
        }
        if !records.is_empty() {
            let n = records.len();
            let message = format!(
                "neo: outcomes from {scanned} commit{} of {} ({n} outcome{})",
                if scanned == 1 { "" } else { "s" },
                opts.branch,
                if n == 1 { "" } else { "s" }
            );
            report.memory_commit = self.write_generated(records, message, ctx)?.commit;
        }
        save_cursor(&path, &state)?;
        Ok(report)
    }
}

/// Keep the scan's cursor and tracking state beside the caches (written aside, then renamed).
fn save_cursor(path: &std::path::Path, state: &ScanState) -> Result<()> {
    let Some(dir) = path.parent() else { return Ok(()) };
    let io = |e| Error::Io { context: format!("writing {}", path.display()), source: e };
    std::fs::create_dir_all(dir).map_err(io)?;
    let tmp = path.with_extension("tmp");
    let bytes = serde_json::to_vec(state).map_err(|e| Error::invalid("outcomes", e.to_string()))?;
    std::fs::write(&tmp, bytes).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// One step in how a record's confidence came to be.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub outcome: RecordId,
    pub at: Timestamp,
    pub signal: String,
    pub delta: f64,
    pub commits: Vec<String>,
    pub paths: Vec<String>,
    /// Why the commit is this evidence (the outcome's body).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub why: String,
    /// False when an earlier outcome had the same idempotency key (the same evidence).
    pub counted: bool,
    /// The running sum after this step, before clamping.
    pub running: f64,
}

/// How a record's current confidence came to be.
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    pub id: RecordId,
    pub kind: Kind,
    pub summary: String,
    pub status: Status,
    /// The confidence written in the record.
    pub initial: f64,
    /// Facts this one superseded, whose confidence it carried over (+0.05) unless given one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub carried_from: Vec<RecordId>,
    pub steps: Vec<Step>,
    /// The sum clamped to 0.0..=1.0: the current confidence.
    pub confidence: f64,
    pub successes: u32,
    /// The factor recall multiplies relevance by: `(0.5 + confidence) × (1 + 0.1 × min(log2(1 +
    /// successes), 3))`.
    pub recall_weight: f64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub needs_review: Vec<String>,
}

impl Memory {
    /// Explain a record's confidence: its initial value, carry-over, each outcome with its commit
    /// and evidence (and whether it counted), the clamped result and its weight in recall.
    pub fn explain(&self, prefix: &str) -> Result<Explanation> {
        let id = self.resolve("id", prefix)?;
        let e = &self.state().entries[&id];
        let initial = crate::state::initial_confidence(&e.record);
        let mut carried_from = Vec::new();
        let mut steps = Vec::new();
        let mut keys = HashSet::new();
        let mut running = initial.0;
        for other in self.state().iter() {
            match &other.record.payload {
                Payload::Supersession(s) if s.new == Some(id) && other.status == Status::Valid => {
                    carried_from.push(s.old)
                }
                Payload::Outcome(o) if o.target == id && other.status == Status::Valid => {
                    let counted = keys.insert(o.key.clone());
                    if counted {
                        running += o.delta.0;
                    }
                    steps.push(Step {
                        outcome: other.id,
                        at: other.record.created_at,
                        signal: o.signal.clone(),
                        delta: o.delta.as_f64(),
                        commits: o.commits.clone(),
                        paths: o.paths.clone(),
                        why: other.record.body.trim().to_string(),
                        counted,
                        running: Milli(running).as_f64(),
                    });
                }
                _ => {}
            }
        }
        let confidence = if matches!(e.record.kind, Kind::Fact | Kind::Attempt) { e.confidence.as_f64() } else { 0.5 };
        let success = 1.0 + 0.1 * (f64::from(e.successes) + 1.0).log2().min(3.0);
        Ok(Explanation {
            id,
            kind: e.record.kind,
            summary: e.record.summary(),
            status: e.status,
            initial: initial.as_f64(),
            carried_from,
            steps,
            confidence: e.confidence.as_f64(),
            successes: e.successes,
            recall_weight: ((0.5 + confidence) * success * 1000.0).round() / 1000.0,
            needs_review: e.needs_review.iter().map(|f| f.to_string()).collect(),
        })
    }
}
