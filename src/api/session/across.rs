//! A session across scopes: writes that reach beyond the scope written to (a supersession named
//! in another scope, sharing an org write, ingesting documents and embedding their sections).
//! Reading across scopes is recall's (`recall.rs`).

use super::Warm;
use crate::api::session::Session;
use crate::api::write::AddOutcome;
use crate::api::write::AddRequest;
use crate::api::write::WriteContext;
use crate::error::{Error, Result};
use crate::scope::Scope;

impl Session {
    /// The `--supersedes` ids of `req` that name a current fact of another scope (asked for
    /// explicitly, so a supersession may cross scopes: it is recorded in the target scope and
    /// applies wherever both are read), and the request without them.
    pub(super) fn foreign_supersessions(
        &mut self,
        req: &AddRequest,
    ) -> Result<(Vec<crate::api::write::supersede::PlannedSupersession>, AddRequest)> {
        let target = self.target();
        let mut local = req.clone();
        local.supersedes.clear();
        let mut foreign = Vec::new();
        for prefix in &req.supersedes {
            match self.memory()?.resolve("supersedes", prefix) {
                Err(Error::NotFound { .. }) => {}
                _ => {
                    local.supersedes.push(prefix.clone());
                    continue;
                }
            }
            let mut found = None;
            for scope in self.places().readable()?.into_iter().filter(|s| *s != target) {
                let Ok(memory) = self.memory_of(&scope) else { continue };
                if let Ok(id) = memory.resolve("supersedes", prefix) {
                    let e = &memory.state().entries[&id];
                    if e.record.kind == crate::record::Kind::Fact && e.status == crate::state::Status::Valid {
                        found = Some((scope.clone(), id, e.record.summary()));
                        break;
                    }
                }
            }
            match found {
                Some((scope, old, subject)) => {
                    let why = req.reason.clone().unwrap_or_else(|| {
                        format!("replaced explicitly, across scopes (a fact of the {scope} memory)")
                    });
                    let method = crate::record::SupersessionMethod::Explicit;
                    foreign.push(
                        crate::api::write::supersede::PlannedSupersession::new(old, subject, method, why)
                            .in_scope(scope.to_string()),
                    )
                }
                // Not found anywhere: the write path says so, naming the field.
                None => local.supersedes.push(prefix.clone()),
            }
        }
        Ok((foreign, local))
    }

    /// After a write to the org memory, share it: push it (auto mode) or push it as a proposal
    /// branch (review mode). When the org cannot be reached the record stays in the local cache
    /// and the error says how to share it later.
    pub(super) fn share(&mut self, mut outcome: AddOutcome, wc: &WriteContext) -> Result<AddOutcome> {
        if self.target() != Scope::Org || outcome.commit.is_none() {
            return Ok(outcome);
        }
        let memory = self.memory()?;
        let url = memory.store().remote_url(crate::api::share::scopes::REMOTE).unwrap_or_default();
        match crate::api::share::share_org(memory, wc) {
            Ok(proposal) => {
                outcome.shared = Some(match proposal {
                    Some(p) => format!("proposed as branch {} of {url}, for review in a pull request", p.branch),
                    None => format!("pushed to {url}"),
                });
                Ok(outcome)
            }
            Err(e) => Err(Error::NotShared { id: outcome.id.short(), scope: "org".into(), why: e.to_string() }),
        }
    }
}

impl Session {
    /// Ingest documents into the target scope's memory (`Memory::ingest`), then embed their
    /// new sections (with progress) so the first recall does not wait for it.
    pub fn ingest(&mut self, targets: &[String]) -> Result<crate::api::write::ingest::IngestOutcome> {
        let (memory, wc) = self.writing()?;
        let outcome = memory.ingest(targets, &wc)?;
        // Nothing new: every section was embedded when it was ingested (no model load). A dry
        // run wrote nothing to embed.
        if outcome.plan.is_some() || outcome.documents.iter().all(|d| d.id.is_none()) {
            return Ok(outcome);
        }
        self.warm.ensure_embedder(&self.opts.embedder);
        self.warm.embedder_ready();
        let scope = self.target();
        let part = self.parts.get(&scope).expect("loaded by writing()");
        let memory = part.memory.as_ref().expect("loaded by writing()");
        let Warm { embedder, progress, .. } = &mut self.warm;
        if let Some(e) = embedder.as_deref_mut() {
            memory
                .embed_documents(&part.documents, e, &mut |done, total| progress("embedding documents", done, total))?;
        }
        Ok(outcome)
    }
}
