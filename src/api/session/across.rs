//! A session across scopes: which scopes a recall reads and how old the org cache is, the fold of
//! their records together, recall ranked over all of them (with the project's documents), and
//! writes that reach beyond the scope written to (a supersession named in another scope, sharing
//! an org write, ingesting documents and embedding their sections).

use super::{reborrow, Union, Warm};
use crate::api::{AddOutcome, AddRequest, Memory, Notice, RecallQuery, Session, WriteContext};
use crate::construct;
use crate::error::{Error, Result};
use crate::recall::{Recall, Request};
use crate::record::{FactType, RecordId, Timestamp};
use crate::scope::Scope;
use std::collections::HashMap;
use std::sync::Arc;

impl Session {
    /// The scopes a recall reads: the one asked for, or every scope there is with the sessions
    /// of this worktree alone unless `all_sessions` (those that cannot be read are left out with
    /// a notice; the project must answer).
    pub(super) fn recall_scopes(&mut self, all_sessions: bool) -> Result<Vec<Scope>> {
        let wanted = match &self.opts.scope {
            Some(s) => vec![s.clone()],
            None => {
                let places = self.places();
                let project = self.memory_of(&Scope::Project)?.store();
                let here = crate::api::scopes::session_named_in(project.git_dir());
                let mut scopes = places.readable_from(project)?;
                scopes.retain(|s| match s {
                    Scope::Session(name) => all_sessions || here.as_deref() == Some(name.as_str()),
                    _ => true,
                });
                scopes
            }
        };
        let target = self.target();
        let mut live = Vec::new();
        for scope in wanted {
            match self.memory_of(&scope) {
                Ok(_) => live.push(scope),
                Err(e) if scope != target => {
                    self.parts.remove(&scope);
                    self.warm.notices.push(Notice::ScopeUnreadable { scope: scope.to_string(), why: e.to_string() });
                }
                Err(e) => return Err(e),
            }
        }
        if live.contains(&Scope::Org) {
            self.note_org_age()?;
        }
        Ok(live)
    }

    /// Say when the org cache is older than `neo.org.refreshMinutes`, or refused its last fetch.
    fn note_org_age(&mut self) -> Result<()> {
        let Some(store) = self.parts.get(&Scope::Org).and_then(|p| p.memory.as_ref()).map(|m| m.store()) else {
            return Ok(());
        };
        if let Some(why) = crate::api::scopes::refused(store) {
            self.warm.notices.push(Notice::ScopeUnreadable { scope: "org".into(), why });
        }
        // The project's config (read already: its memory is loaded for every recall).
        let project = self.parts.get(&Scope::Project).and_then(|p| p.memory.as_ref()).map(|m| m.store());
        let configured = match project {
            Some(p) => p.config_value(crate::config::ORG_REFRESH_MINUTES),
            None => self.project_store()?.config_value(crate::config::ORG_REFRESH_MINUTES),
        };
        let minutes = match configured {
            Some(v) => crate::config::parse_u64(crate::config::ORG_REFRESH_MINUTES, &v)?,
            None => crate::config::DEFAULT_ORG_REFRESH_MINUTES,
        };
        let fetched = crate::api::scopes::last_fetch(store);
        let old = fetched.is_none_or(|t| self.now().0 - t.0 > minutes as i64 * 60);
        if minutes > 0 && old {
            let fetch = crate::api::scopes::claim_fetch(store);
            self.warm.notices.push(Notice::OrgStale { fetched, fetch });
        }
        Ok(())
    }

    /// The fold of the records of `scopes`, kept while their tips stay and caught up in place
    /// when they only grew (a write between two recalls adds a record or two: the union takes
    /// them as the scope's own state did, instead of folding every scope again).
    fn union_of(&mut self, scopes: &[Scope]) -> &Union {
        let memories: Vec<(&Scope, &Memory)> =
            scopes.iter().filter_map(|s| self.parts.get(s).and_then(|p| p.memory.as_ref()).map(|m| (s, m))).collect();
        let tips: Vec<String> =
            memories.iter().flat_map(|(s, m)| std::iter::once(s.to_string()).chain(m.tip_ids())).collect();
        if self.union.as_ref().is_some_and(|u| u.tips == tips) {
            return self.union.as_ref().expect("checked above");
        }
        // Higher priority first: a record held by two scopes is said to come from the stronger.
        let mut by_priority = memories.clone();
        by_priority.sort_by_key(|(s, _)| std::cmp::Reverse(s.priority()));
        let same_scopes = |u: &Union| u.scopes.as_slice() == scopes;
        let held = |origins: &HashMap<RecordId, Scope>| {
            origins
                .iter()
                .all(|(id, s)| memories.iter().any(|(scope, m)| *scope == s && m.state().entries.contains_key(id)))
        };
        let union = match self.union.take() {
            // Every record the union holds is still where it came from: add what is new.
            Some(u) if same_scopes(&u) && held(&u.origins) => {
                let mut origins = Arc::try_unwrap(u.origins).unwrap_or_else(|shared| (*shared).clone());
                let mut added = Vec::new();
                for (scope, memory) in &by_priority {
                    for e in memory.state().entries.values() {
                        if let std::collections::hash_map::Entry::Vacant(slot) = origins.entry(e.id) {
                            slot.insert((*scope).clone());
                            added.push((e.id, e.record.clone()));
                        }
                    }
                }
                Union { scopes: scopes.to_vec(), tips, state: u.state.with_records(added), origins: Arc::new(origins) }
            }
            _ => {
                let mut origins = HashMap::new();
                let mut records = Vec::new();
                for (scope, memory) in &by_priority {
                    for e in memory.state().entries.values() {
                        if origins.insert(e.id, (*scope).clone()).is_none() {
                            records.push((e.id, e.record.clone()));
                        }
                    }
                }
                let state = crate::state::fold(records);
                Union { scopes: scopes.to_vec(), tips, state, origins: Arc::new(origins) }
            }
        };
        self.union.insert(union)
    }

    /// Recall for a query over every scope (or the one asked for): the memories' layers ranked
    /// together, attempts with their freshness, and the Construct patterns that clearly match
    /// ([`construct::for_recall`]).
    ///
    /// A recall a front end asked for (`q.front`) is kept in the local telemetry (see
    /// [`crate::api::telemetry`]) unless `neo.telemetry` is off.
    pub fn recall(&mut self, q: &RecallQuery) -> Result<Recall> {
        let started = std::time::Instant::now();
        let result = self.recall_now(q)?;
        if let Some(front) = q.front {
            let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
            if let Err(e) = self.keep_telemetry(front, &result, latency_ms) {
                self.warm.notices.push(crate::api::Notice::TelemetryFailed(e.to_string()));
            }
        }
        Ok(result)
    }

    /// Append one recall to the project's telemetry, when it is on.
    fn keep_telemetry(&mut self, front: crate::api::telemetry::Front, r: &Recall, latency_ms: f64) -> Result<()> {
        use crate::api::telemetry::{append, Candidates, Event, Returned, Settings};
        let (caches, settings) = match self.parts.get(&Scope::Project).and_then(|p| p.memory.as_ref()) {
            Some(m) => (m.store().caches(), Settings::from_config(&|k| m.store().config_value(k))?),
            None => {
                let store = self.project_store()?;
                (store.caches(), Settings::from_config(&|k| store.config_value(k))?)
            }
        };
        if !settings.on {
            return Ok(());
        }
        // Every layer, documents and patterns included, in the order shown.
        let results: Vec<Returned> = r
            .entries()
            .into_iter()
            .enumerate()
            .map(|(n, e)| Returned { id: e.id, rank: n as u32 + 1, layer: e.layer.name().to_string(), scope: e.scope })
            .collect();
        let event = Event::new(
            self.now(),
            front,
            &r.query,
            settings.queries,
            r.query_vector.as_ref().map(|(m, v)| (m.as_str(), v.as_slice())),
            Candidates { lexical: r.candidates[0], vector: r.candidates[1] },
            results,
            r.tokens,
            latency_ms,
            r.scopes.clone(),
        );
        append(&caches, &event)
    }

    fn recall_now(&mut self, q: &RecallQuery) -> Result<Recall> {
        if q.query.trim().is_empty() {
            return Err(Error::invalid("query", "is empty; say what the task is about"));
        }
        let mut types = Vec::new();
        for t in &q.types {
            types.push(FactType::from_word(t.trim()).ok_or_else(|| {
                Error::invalid("type", format!("{t:?} is not a fact type; use one of: {}", FactType::expected()))
            })?);
        }
        let now = self.now();
        let scopes = self.recall_scopes(q.all_sessions)?;
        let memory = self.memory()?;
        let as_of = match q.as_of.as_deref().map(str::trim) {
            None => None,
            Some(v) => Some(match Timestamp::parse(v) {
                Some(t) => t,
                None => memory.commit_time(v).map_err(|_| {
                    Error::invalid(
                        "as_of",
                        format!(
                            "{v:?} is neither a date (YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ) nor a commit in this repository"
                        ),
                    )
                })?,
            }),
        };
        let fusion = match memory.store().config_value(crate::config::RECALL_FUSION) {
            None => crate::rank::FusionKind::default(),
            Some(v) => crate::rank::FusionKind::parse(&v).ok_or_else(|| {
                Error::invalid(
                    crate::config::RECALL_FUSION,
                    format!("{v:?} is not a fusion: use weighted, weighted:W (W from 0 to 1), rrf or adaptive"),
                )
            })?,
        };
        let expand = match memory.store().config_value(crate::config::RECALL_EXPAND) {
            None => crate::recall::expand::When::default(),
            Some(v) => crate::recall::expand::When::parse(&v).ok_or_else(|| {
                Error::invalid(crate::config::RECALL_EXPAND, format!("{v:?} is not one of true, false, disagreement"))
            })?,
        };
        let floor = match memory.store().config_value(crate::config::RECALL_FLOOR) {
            None => crate::config::DEFAULT_RECALL_FLOOR,
            Some(v) => v.trim().parse::<f64>().ok().filter(|f| (0.0..=1.0).contains(f)).ok_or_else(|| {
                Error::invalid(crate::config::RECALL_FLOOR, format!("{v:?} is not a share: use a number from 0 to 1"))
            })?,
        };
        for scope in &scopes {
            let part = self.parts.get_mut(scope).expect("read by recall_scopes");
            let memory = part.memory.as_ref().expect("read by recall_scopes");
            self.warm.refresh_indexes(&mut part.indexes, memory, &self.opts.embedder, true)?;
        }
        self.warm.say_semantic_off();
        if scopes.len() > 1 {
            self.union_of(&scopes);
        }
        let live = self.live_view(&scopes)?;
        let req = Request {
            query: q.query.clone(),
            k: q.k,
            budget: q.budget,
            types,
            area: q.area.clone(),
            now,
            as_of,
            origins: None,
            fetched: None,
            fusion,
            expand,
            floor,
            pin: live.as_ref().map(|(p, _)| p.clone()),
        };
        let parts: Vec<crate::api::recall::Part<'_>> = scopes
            .iter()
            .map(|s| {
                let p = &self.parts[s];
                crate::api::recall::Part {
                    scope: s.clone(),
                    memory: p.memory.as_ref().expect("read by recall_scopes"),
                    indexes: &p.indexes.as_ref().expect("refreshed above").0,
                }
            })
            .collect();
        let union = match scopes.len() {
            1 => None,
            _ => self.union.as_ref().map(|u| (&u.state, u.origins.clone())),
        };
        let mut result = crate::api::recall::recall_parts(&parts, union, reborrow(&mut self.warm.embedder), &req)?;
        result.stale = live.and_then(|(_, s)| s);
        // The project's documents come after the memories: the sections that match best.
        if let Some(project) = self.parts.get(&Scope::Project).and_then(|p| p.memory.as_ref()) {
            let qv = result.query_vector.as_ref().map(|(_, v)| v.as_slice());
            let Warm { embedder, progress, .. } = &mut self.warm;
            let hits = project.document_hits(
                &req.query,
                qv,
                reborrow(embedder),
                crate::api::documents::DOCUMENT_SECTIONS,
                &mut |done, total| progress("embedding documents", done, total),
            )?;
            result.attach_documents(hits);
        }
        // The Construct comes after the memories: a few patterns that clearly match.
        let hits = self.warm.construct_hits(
            &self.opts.places(),
            &req.query,
            result.query_vector.as_ref(),
            construct::RECALL_PATTERNS,
        )?;
        result.attach_construct(construct::for_recall(hits));
        Ok(result)
    }

    /// The `--supersedes` ids of `req` that name a current fact of another scope (asked for
    /// explicitly, so a supersession may cross scopes: it is recorded in the target scope and
    /// applies wherever both are read), and the request without them.
    pub(super) fn foreign_supersessions(
        &mut self,
        req: &AddRequest,
    ) -> Result<(Vec<crate::api::PlannedSupersession>, AddRequest)> {
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
                Some((scope, old, subject)) => foreign.push(crate::api::PlannedSupersession {
                    old,
                    old_scope: Some(scope.to_string()),
                    subject,
                    method: crate::record::SupersessionMethod::Explicit,
                    score: None,
                    reason: req.reason.clone().unwrap_or_else(|| {
                        format!("replaced explicitly, across scopes (a fact of the {scope} memory)")
                    }),
                }),
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
        let url = memory.store().remote_url(crate::api::scopes::REMOTE).unwrap_or_default();
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
    /// Ingest documents into the target scope's memory ([`Memory::ingest`]), then embed their
    /// new sections (with progress) so the first recall does not wait for it.
    pub fn ingest(&mut self, targets: &[String]) -> Result<crate::api::ingest::IngestOutcome> {
        let (memory, wc) = self.writing()?;
        let outcome = memory.ingest(targets, &wc)?;
        // Nothing new: every section was embedded when it was ingested (no model load). A dry
        // run wrote nothing to embed.
        if outcome.plan.is_some() || outcome.documents.iter().all(|d| d.id.is_none()) {
            return Ok(outcome);
        }
        self.warm.ensure_embedder(&self.opts.embedder);
        let scope = self.target();
        let memory = self.parts.get(&scope).and_then(|p| p.memory.as_ref()).expect("loaded by writing()");
        let Warm { embedder, progress, .. } = &mut self.warm;
        if let Some(e) = embedder.as_deref_mut() {
            memory.embed_documents(e, &mut |done, total| progress("embedding documents", done, total))?;
        }
        Ok(outcome)
    }
}
