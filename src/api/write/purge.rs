//! Purge: the one history-rewriting operation, for leaked secrets (docs/security.md).

use crate::api::memory::Memory;
use crate::api::write::WriteContext;
use crate::error::{Error, Result};
use crate::record::{self, Problem, Problems, Record, RecordId};
use crate::state;
use crate::store::WriteMode;

/// What `purge` did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PurgeOutcome {
    pub id: RecordId,
    pub path: String,
    /// The new tip of the memory ref: the purge note on top of the rewritten history.
    pub commit: String,
    /// The tip before the rewrite (what a `--force-with-lease` push expects on the remote).
    pub old_tip: String,
    /// Commits written anew, of all commits walked.
    pub rewritten: usize,
    pub commits: usize,
    /// Remote-tracking refs that still hold the record until the rewritten history is pushed.
    pub remote_copies: Vec<String>,
}

impl Memory {
    /// Remove a record physically: rewrite the local memory ref's whole history so that no commit
    /// on it holds the record's file, and end it with a commit carrying a `Neo-Purge: <id>`
    /// trailer (the note that says it was done on purpose, without the content). For leaked
    /// secrets only; forgetting is the normal, history-keeping path. What remotes and other
    /// clones need afterwards is in [`PurgeOutcome`] and docs/security.md.
    pub fn purge(&mut self, prefix: &str, reason: &str, ctx: &WriteContext) -> Result<PurgeOutcome> {
        if self.store.write_mode() == WriteMode::Off {
            self.target()?;
        }
        let id = self.resolve("id", prefix)?;
        let mut problems = Vec::new();
        record::validate::check_line(
            &mut problems,
            "reason",
            reason.trim(),
            record::validate::MAX_LINE_CHARS,
            "why the record is purged",
        );
        // The reason lands in a commit message: it must not carry the secret being purged.
        if let Some(f) = crate::redact::scan(reason).first() {
            problems.push(Problem::new(
                "reason",
                format!("contains {} (rule {}); describe the leak without quoting it", f.what, f.rule),
            ));
        }
        if !problems.is_empty() {
            return Err(Error::Invalid(Problems(problems)));
        }
        let kind = self.state.entries[&id].record.kind;
        let path = Record::path(kind, &id);
        let message = format!(
            "neo: purge {kind} {}\n\nReason: {}\nNeo-Purge: {}\n",
            id.short(),
            reason.trim().replace('\n', " "),
            id.to_hex()
        );
        let scrub = crate::store::scrub_texts(&self.state.entries[&id].record.summary());
        let rewrite = self.store.rewrite_without(&path, &scrub, &message, &ctx.identity, ctx.now)?;
        self.store.remember_purged(&[id])?;
        let mut remote_copies = Vec::new();
        for (name, tip) in &self.tips {
            if name != self.store.ref_name() && self.store.commit_has_path(*tip, &path)? {
                remote_copies.push(name.clone());
            }
        }
        self.tips.retain(|(name, _)| name != self.store.ref_name());
        self.tips.insert(0, (self.store.ref_name().to_string(), rewrite.new_tip));
        self.blobs.remove(&id);
        self.state.entries.remove(&id);
        self.state = state::fold(std::mem::take(&mut self.state.entries).into_values().map(|e| (e.id, e.record)));
        // A record left: whatever was folded from this memory must fold it again.
        self.lineage = crate::api::memory::Lineage::fresh();
        self.advances.clear();
        Ok(PurgeOutcome {
            id,
            path,
            commit: rewrite.new_tip.to_string(),
            old_tip: rewrite.old_tip.to_string(),
            rewritten: rewrite.rewritten,
            commits: rewrite.commits,
            remote_copies,
        })
    }
}
