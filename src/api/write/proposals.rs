//! Review mode: the proposals ref, and approving or rejecting what waits in it.

use super::plan;
use crate::api::memory::Memory;
use crate::api::write::WriteContext;
use crate::error::{Error, Result};
use crate::record::{Record, RecordId};
use crate::state::Entry;
use crate::store::WriteMode;

/// What `approve` or `reject` did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ReviewOutcome {
    /// The proposals approved or rejected.
    pub ids: Vec<RecordId>,
    /// The new commit on the memory ref (approve only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// In a dry run, the plan that was not applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<plan::PlanView>,
}

impl Memory {
    /// Records waiting in the review-mode proposals ref, oldest first.
    pub fn proposed(&mut self) -> Result<Vec<Entry>> {
        Ok(self.ensure_proposals()?.state.iter().cloned().collect())
    }

    fn pick_proposals(&mut self, prefixes: &[String], all: bool) -> Result<Vec<RecordId>> {
        let proposals = self.ensure_proposals()?;
        if all {
            return Ok(proposals.state.order.clone());
        }
        if prefixes.is_empty() {
            return Err(Error::invalid_with_hint(
                "id",
                "name the proposals to act on",
                "their ids are in `git neo list --proposed`; or pass --all",
            ));
        }
        prefixes.iter().map(|p| proposals.resolve("id", p)).collect()
    }

    /// Move proposals onto the memory ref (one commit), then drop them from the proposals ref.
    pub fn approve(&mut self, prefixes: &[String], all: bool, ctx: &WriteContext) -> Result<ReviewOutcome> {
        if self.store.write_mode() == WriteMode::Off {
            self.target()?;
        }
        let ids = self.pick_proposals(prefixes, all)?;
        if ids.is_empty() {
            return Ok(ReviewOutcome { ids, commit: None, plan: None });
        }
        let proposals = self.proposals.as_deref().expect("picked from loaded proposals");
        let mut records = Vec::with_capacity(ids.len());
        let mut paths = Vec::with_capacity(ids.len());
        for id in &ids {
            let entry = &proposals.state.entries[id];
            let bytes = proposals.store.read_blob(proposals.blobs[id])?;
            records.push(plan::Planned::Copy { id: *id, bytes });
            paths.push(Record::path(entry.record.kind, id));
        }
        let message = format!("neo: approve {} proposed record{}", ids.len(), if ids.len() == 1 { "" } else { "s" });
        // A proposal passes the same filter as any write on its way in: one changed after it was
        // proposed (its bytes no longer hash to its id) or failing validation is refused.
        let plan = plan::WritePlan {
            destination: plan::Destination::Own,
            commits: vec![plan::PlannedCommit { message, records }],
            expected_tip: self.own_tip(),
            create: false,
            origin: plan::Origin::Given,
        };
        let applied = self.apply(plan, ctx)?;
        if applied.dry_run.is_some() {
            return Ok(ReviewOutcome { ids, commit: None, plan: applied.dry_run });
        }
        let store = self.store.proposals()?;
        store.remove_records(&paths, &format!("neo: approved {}", ids.len()), &ctx.identity, ctx.now)?;
        self.proposals = None;
        Ok(ReviewOutcome { ids, commit: applied.commit(), plan: None })
    }

    /// Drop proposals without moving them to the memory ref.
    pub fn reject(&mut self, prefixes: &[String], ctx: &WriteContext) -> Result<ReviewOutcome> {
        let ids = self.pick_proposals(prefixes, false)?;
        let proposals = self.proposals.as_deref().expect("picked from loaded proposals");
        let paths: Vec<String> =
            ids.iter().map(|id| Record::path(proposals.state.entries[id].record.kind, id)).collect();
        let store = self.store.proposals()?;
        store.remove_records(&paths, &format!("neo: reject {}", ids.len()), &ctx.identity, ctx.now)?;
        self.proposals = None;
        Ok(ReviewOutcome { ids, commit: None, plan: None })
    }
}
