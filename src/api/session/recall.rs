//! Recall, as one pipeline: the scopes a recall reads (and how old the org cache is), their
//! indexes caught up, the fold of their records together, the candidates their indexes offer,
//! then every layer in [`LayerKind::ALL`]'s order, from the memory, the project's documents or
//! the Construct, fitted into what is left of one budget; then telemetry. The ranking itself is
//! pure (`crate::recall`); what only the repositories can say (the indexes' candidates, attempts'
//! freshness) is `crate::api::recall`'s.

use super::{reborrow, Union, Warm};
use crate::api::memory::Memory;
use crate::api::recall::Source;
use crate::api::session::Notice;
use crate::api::session::RecallQuery;
use crate::api::session::Session;
use crate::config::RecallSettings;
use crate::construct;
use crate::error::{Error, Result};
use crate::recall::{Budget, DocumentSection, Layer, LayerKind, Layers, Recall, Request};
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
                let here = crate::api::share::scopes::session_named_in(project.git_dir());
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
        if let Some(why) = crate::api::share::scopes::refused(store) {
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
        let fetched = crate::api::share::scopes::last_fetch(store);
        let old = fetched.is_none_or(|t| self.now().0 - t.0 > minutes as i64 * 60);
        if minutes > 0 && old {
            let fetch = crate::api::share::scopes::claim_fetch(store);
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
        let seen: Vec<(Scope, u64, usize)> =
            memories.iter().map(|(s, m)| ((*s).clone(), m.lineage().generation, m.lineage().appended.len())).collect();
        // Higher priority first: a record held by two scopes is said to come from the stronger.
        let mut by_priority = memories.clone();
        by_priority.sort_by_key(|(s, _)| std::cmp::Reverse(s.priority()));
        let same_scopes = |u: &Union| u.scopes.as_slice() == scopes;
        let grown = |u: &Union| {
            u.seen.len() == seen.len()
                && u.seen.iter().zip(&seen).all(|((s0, g0, n0), (s1, g1, n1))| s0 == s1 && g0 == g1 && n0 <= n1)
        };
        let held = |origins: &HashMap<RecordId, Scope>| {
            origins
                .iter()
                .all(|(id, s)| memories.iter().any(|(scope, m)| *scope == s && m.state().entries.contains_key(id)))
        };
        // Every memory is the one folded in, grown in place since: only its appended records can
        // be new. Otherwise, while every record held is still where it came from, every record
        // of every scope is looked at for new ones.
        let only_appended = self.union.as_ref().is_some_and(grown);
        let union = match self.union.take() {
            Some(u) if same_scopes(&u) && (only_appended || held(&u.origins)) => {
                let mut origins = Arc::try_unwrap(u.origins).unwrap_or_else(|shared| (*shared).clone());
                let mut added = Vec::new();
                for (scope, memory) in &by_priority {
                    let entries = &memory.state().entries;
                    let candidates: Vec<&crate::state::Entry> = if only_appended {
                        let from = u.seen.iter().find(|(s, ..)| s == *scope).map_or(0, |(_, _, n)| *n);
                        memory.lineage().appended[from..].iter().filter_map(|id| entries.get(id)).collect()
                    } else {
                        entries.values().collect()
                    };
                    for e in candidates {
                        if let std::collections::hash_map::Entry::Vacant(slot) = origins.entry(e.id) {
                            slot.insert((*scope).clone());
                            added.push((e.id, e.record.clone()));
                        }
                    }
                }
                Union {
                    scopes: scopes.to_vec(),
                    tips,
                    state: u.state.with_records(added),
                    origins: Arc::new(origins),
                    seen,
                }
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
                Union { scopes: scopes.to_vec(), tips, state, origins: Arc::new(origins), seen }
            }
        };
        self.union.insert(union)
    }

    /// Recall for a query over every scope (or the one asked for): the memories' layers ranked
    /// together, attempts with their freshness, and the Construct patterns that clearly match
    /// ([`construct::for_recall`]).
    ///
    /// A recall a front end asked for (`q.front`) is kept in the local telemetry (see
    /// [`crate::api::learn::telemetry`]) unless `neo.telemetry` is off.
    pub fn recall(&mut self, q: &RecallQuery) -> Result<Recall> {
        let started = std::time::Instant::now();
        let result = self.recall_now(q)?;
        if let Some(front) = q.front {
            let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
            if let Err(e) = self.keep_telemetry(front, &result, latency_ms) {
                self.warm.notices.push(crate::api::session::Notice::TelemetryFailed(e.to_string()));
            }
        }
        Ok(result)
    }

    /// Append one recall to the project's telemetry, when it is on.
    fn keep_telemetry(
        &mut self,
        front: crate::api::learn::telemetry::Front,
        r: &Recall,
        latency_ms: f64,
    ) -> Result<()> {
        use crate::api::learn::telemetry::{append, Candidates, Event, Returned, Settings};
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
        // The events before this one first, so that the file keeps them in order.
        self.flush_telemetry();
        if self.warm.answer_first {
            self.warm.telemetry.push((caches, event));
            return Ok(());
        }
        append(&caches, &event)
    }

    /// The pipeline: the request read, the scopes picked, their indexes caught up, the
    /// candidates gathered, then each layer in turn fitted into what is left of the budget.
    fn recall_now(&mut self, q: &RecallQuery) -> Result<Recall> {
        // The request, checked (every field before anything is read), and the scopes it reads.
        if q.query.trim().is_empty() {
            return Err(Error::invalid("query", "is empty; say what the task is about"));
        }
        let types = fact_types(&q.types)?;
        let now = self.now();
        // The model starts loading now (when it is not loaded yet), beside the reading of the
        // memory and its indexes below; the query's embedding waits for what is left of it.
        self.warm.ensure_embedder(&self.opts.embedder);
        let scopes = self.recall_scopes(q.all_sessions)?;
        let memory = self.memory()?;
        let as_of = as_of(memory, q.as_of.as_deref())?;
        let settings = RecallSettings::from_config(&|k| memory.store().config_value(k))?;

        // Each scope's indexes caught up to its memory; several scopes folded together.
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

        // The candidates every scope's indexes offer, ranked on the fold of the scopes.
        let Session { parts, union, warm, opts, .. } = self;
        let sources: Vec<Source<'_>> = scopes
            .iter()
            .map(|s| {
                let p = &parts[s];
                Source {
                    scope: s.clone(),
                    memory: p.memory.as_ref().expect("read by recall_scopes"),
                    indexes: &p.indexes.as_ref().expect("refreshed above").0,
                }
            })
            .collect();
        let (state, origins) = match (scopes.len(), union.as_ref()) {
            (2.., Some(u)) => (&u.state, Some(u.origins.clone())),
            _ => (sources[0].memory.state(), None),
        };
        let req = Request {
            query: q.query.clone(),
            k: q.k,
            budget: q.budget,
            types,
            area: q.area.clone(),
            now: as_of.unwrap_or(now),
            as_of,
            origins,
            fetched: crate::api::recall::fetched(&sources),
            fusion: settings.fusion,
            expand: settings.expand,
            floor: settings.floor,
            pin: live.as_ref().map(|(p, _)| p.clone()),
        };
        let mut found = crate::api::recall::candidates(&sources, state, &req, reborrow(&mut warm.embedder))?;
        let passages = std::mem::take(&mut found.passages);
        // With `--as-of`, the answer is read from the memory as it stood then.
        let then;
        let state = match req.as_of {
            Some(t) => {
                then = state.as_of(t);
                &then
            }
            None => state,
        };
        let mut ranked = crate::recall::rank(state, &req, found);

        // Each layer in turn, from the memory, the project's documents or the Construct.
        let mut budget = Budget::new(req.budget);
        let mut layers = Layers::default();
        for kind in LayerKind::ALL {
            let layer = match kind {
                LayerKind::Documents => {
                    let project = parts.get(&Scope::Project);
                    Layer::Sections(budget.fit(kind, documents(project, &req.query, ranked.query_vector(), warm)?))
                }
                LayerKind::Construct => {
                    let hits = warm.construct_hits(
                        &opts.places(),
                        &req.query,
                        ranked.query_vector(),
                        construct::RECALL_PATTERNS,
                    )?;
                    Layer::Patterns(budget.fit(kind, construct::for_recall(hits)))
                }
                memory => ranked.fit(memory, &mut budget),
            };
            layers.put(kind, layer);
        }
        let mut out = ranked.into_recall(layers, budget);
        crate::api::recall::annotate(&sources, state, &passages, &mut out)?;
        out.stale = live.and_then(|(_, s)| s);
        Ok(out)
    }
}

/// The fact types a recall is limited to, each checked.
fn fact_types(words: &[String]) -> Result<Vec<FactType>> {
    words
        .iter()
        .map(|t| {
            FactType::from_word(t.trim()).ok_or_else(|| {
                Error::invalid("type", format!("{t:?} is not a fact type; use one of: {}", FactType::expected()))
            })
        })
        .collect()
}

/// The time `--as-of` names: a date, or a commit of the memory's repository.
fn as_of(memory: &Memory, value: Option<&str>) -> Result<Option<Timestamp>> {
    let Some(v) = value.map(str::trim) else { return Ok(None) };
    if let Some(t) = Timestamp::parse(v) {
        return Ok(Some(t));
    }
    memory.commit_time(v).map(Some).map_err(|_| {
        Error::invalid(
            "as_of",
            format!("{v:?} is neither a date (YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ) nor a commit in this repository"),
        )
    })
}

/// The project's documents' sections that match best (none without the project's memory).
fn documents(
    project: Option<&super::Part>,
    query: &str,
    query_vector: Option<&(String, Vec<f32>)>,
    warm: &mut Warm,
) -> Result<Vec<DocumentSection>> {
    let Some((memory, slot)) = project.and_then(|p| Some((p.memory.as_ref()?, &p.documents))) else {
        return Ok(Vec::new());
    };
    let Warm { embedder, progress, .. } = warm;
    memory.document_hits(
        slot,
        query,
        query_vector.map(|(_, v)| v.as_slice()),
        reborrow(embedder),
        crate::api::recall::documents::DOCUMENT_SECTIONS,
        &mut |done, total| progress("embedding documents", done, total),
    )
}
