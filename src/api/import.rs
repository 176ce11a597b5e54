//! Import: many fact requests validated first, then written in batches, duplicates skipped.

use super::*;
use crate::error::{Error, Result};
use crate::record::{Kind, Problem, Problems, Record, RecordId};
use crate::state::{self};
use std::collections::HashMap;

/// What `import` did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ImportOutcome {
    /// Records written.
    pub added: usize,
    /// Requests whose content was already stored (or repeated earlier in the same import).
    pub duplicates: usize,
    /// Commits made on the memory ref.
    pub commits: usize,
    /// The id of every request written or already stored, in input order (existing ids for
    /// duplicates; skipped requests have none).
    pub ids: Vec<RecordId>,
    /// Requests left out because they were invalid (only with `skip_invalid`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
}

/// A request `import` left out, and why.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Skipped {
    /// Its position in the requests, from 0.
    pub index: usize,
    /// Every problem found, `field: message`.
    pub problems: Vec<String>,
}

impl Memory {
    /// Add many facts: validate all of them first (every problem, prefixed with its request's
    /// number, and nothing written), or with `skip_invalid` leave the invalid ones out and report
    /// each in [`ImportOutcome::skipped`]; then write them `batch_size` records per commit. `progress(done, total)` is called
    /// after each commit. If the process dies midway, the ref holds the batches that landed.
    pub fn import(
        &mut self,
        requests: &[AddRequest],
        batch_size: usize,
        skip_invalid: bool,
        ctx: &WriteContext,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<ImportOutcome> {
        let mut problems = Vec::new();
        let mut skipped = Vec::new();
        let mut prepared = Vec::with_capacity(requests.len());
        for (i, req) in requests.iter().enumerate() {
            match self.prepare_fact(req, ctx) {
                Ok(r) => prepared.push(r),
                Err(Error::Invalid(p)) if skip_invalid => skipped.push(Skipped {
                    index: i,
                    problems: p.0.iter().map(|p| format!("{}: {}", p.field, p.message)).collect(),
                }),
                Err(Error::Invalid(p)) => problems
                    .extend(p.0.into_iter().map(|p| Problem::new(format!("record {}: {}", i + 1, p.field), p.message))),
                Err(e) => return Err(e),
            }
        }
        if !problems.is_empty() {
            return Err(Error::Invalid(Problems(problems)));
        }
        let mut outcome = ImportOutcome { skipped, ..ImportOutcome::default() };
        let mut fresh: Vec<(RecordId, Record)> = Vec::new();
        let mut seen: HashMap<String, RecordId> = HashMap::new();
        for record in prepared {
            let fact = record.as_fact().expect("prepare_fact builds facts");
            let key = state::dedup_key(fact, &record.body);
            if let Some(existing) = self.state.duplicate_of(fact, &record.body).or_else(|| seen.get(&key).copied()) {
                outcome.duplicates += 1;
                outcome.ids.push(existing);
                continue;
            }
            let (id, _) = record.encode();
            seen.insert(key, id);
            outcome.ids.push(id);
            fresh.push((id, record));
        }
        let total = fresh.len();
        let mut done = 0;
        for chunk in fresh.chunks(batch_size.max(1)) {
            let encoded: Vec<(Kind, RecordId, Vec<u8>)> =
                chunk.iter().map(|(id, r)| (r.kind, *id, r.encode().1)).collect();
            let message = match chunk {
                [(id, r)] => format!(
                    "neo: add {} {} \"{}\"",
                    r.as_fact().map(|f| f.fact_type.as_str()).unwrap_or("fact"),
                    id.short(),
                    short_message(&r.summary())
                ),
                _ => format!("neo: import {} facts", chunk.len()),
            };
            let target = self.target()?;
            let written = target.store.write_records(&encoded, &message, &ctx.identity, ctx.now, false)?;
            if written.commit.is_some() {
                outcome.commits += 1;
            }
            outcome.added += written.added;
            for (_, id, bytes) in &encoded {
                let blob = target.store.hash_blob(bytes)?;
                target.blobs.insert(*id, blob);
            }
            done += chunk.len();
            progress(done, total);
        }
        if total > 0 {
            let target = self.target()?;
            target.state = std::mem::take(&mut target.state).with_records(fresh);
        }
        Ok(outcome)
    }
}

/// What an import from another tool did: the facts (as [`Memory::import`] reports them, over
/// every level) and the supersessions it recorded.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ForeignOutcome {
    #[serde(flatten)]
    pub facts: ImportOutcome,
    /// Supersessions (and outdated marks) written for the other tool's own.
    pub supersessions: usize,
    /// Links that name a fact which was not imported (left out, or invalid and skipped).
    pub links_dropped: usize,
    /// The git-neo id of each imported fact, by the other tool's id.
    #[serde(skip)]
    pub ids: HashMap<String, RecordId>,
}

/// The write request for another tool's fact, without its links (they name ids known only once
/// the facts they point at are written).
pub fn request_of(f: &crate::foreign::ForeignFact) -> AddRequest {
    AddRequest {
        fact_type: f.fact_type.to_string(),
        subject: f.subject.clone(),
        body: f.body.clone(),
        area: f.area.clone(),
        tags: f.tags.clone(),
        confidence: f.confidence,
        provenance: f.provenance.clone(),
        created_at: f.created_at,
        no_supersede: true,
        ..AddRequest::default()
    }
}

impl Memory {
    /// Import another tool's facts and links ([`crate::foreign`]): facts in levels, each fact
    /// after those it names (so its links resolve; a cycle's last edge is dropped), each level
    /// through [`Memory::import`]; then the other tool's supersessions, in one commit, dated as
    /// it dated them. Running it again writes nothing new.
    pub fn import_foreign(
        &mut self,
        foreign: &crate::foreign::Foreign,
        batch_size: usize,
        skip_invalid: bool,
        ctx: &WriteContext,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<ForeignOutcome> {
        use crate::record::{Payload, Supersession, SupersessionMethod};
        // Everything is validated before the first level is written: a fact's links do not
        // change whether it is valid, so it is checked here without them.
        if !skip_invalid {
            let mut problems = Vec::new();
            for (i, f) in foreign.facts.iter().enumerate() {
                if let Err(Error::Invalid(p)) = self.prepare_fact(&request_of(f), ctx) {
                    problems.extend(
                        p.0.into_iter()
                            .map(|p| Problem::new(format!("record {} ({}): {}", i + 1, f.key, p.field), p.message)),
                    );
                }
            }
            if !problems.is_empty() {
                return Err(Error::Invalid(Problems(problems)));
            }
        }
        let mut out = ForeignOutcome::default();
        let keys: std::collections::HashSet<&str> = foreign.facts.iter().map(|f| f.key.as_str()).collect();
        let mut pending: Vec<&crate::foreign::ForeignFact> = foreign.facts.iter().collect();
        let total = pending.len();
        let mut done_before = 0;
        while !pending.is_empty() {
            let names = |f: &crate::foreign::ForeignFact| -> Vec<String> {
                f.depends_on.iter().chain(&f.extends).chain(&f.derives_from).cloned().collect()
            };
            // Ready: every fact it names is imported, or will never be (not in the file).
            let ready_at = |f: &&crate::foreign::ForeignFact| {
                names(f).iter().all(|k| out.ids.contains_key(k) || !keys.contains(k.as_str()))
            };
            let (mut level, rest): (Vec<_>, Vec<_>) = pending.into_iter().partition(ready_at);
            pending = rest;
            if level.is_empty() {
                // A cycle: take the first waiting fact; its links into the cycle are dropped.
                level.push(pending.remove(0));
            }
            let resolve = |ks: &[String], dropped: &mut usize| -> Vec<String> {
                ks.iter()
                    .filter_map(|k| {
                        let id = out.ids.get(k).map(|id| id.to_hex());
                        if id.is_none() {
                            *dropped += 1;
                        }
                        id
                    })
                    .collect()
            };
            let mut dropped = 0;
            let requests: Vec<AddRequest> = level
                .iter()
                .map(|f| AddRequest {
                    depends_on: resolve(&f.depends_on, &mut dropped),
                    extends: resolve(&f.extends, &mut dropped),
                    derives_from: resolve(&f.derives_from, &mut dropped),
                    ..request_of(f)
                })
                .collect();
            out.links_dropped += dropped;
            let mut report = |done: usize, _: usize| progress(done_before + done, total);
            let got = self.import(&requests, batch_size, skip_invalid, ctx, &mut report)?;
            let skipped: std::collections::HashSet<usize> = got.skipped.iter().map(|s| s.index).collect();
            let mut ids = got.ids.iter();
            for (i, f) in level.iter().enumerate() {
                if !skipped.contains(&i) {
                    if let Some(id) = ids.next() {
                        out.ids.insert(f.key.clone(), *id);
                    }
                }
            }
            out.facts.added += got.added;
            out.facts.duplicates += got.duplicates;
            out.facts.commits += got.commits;
            out.facts.ids.extend(got.ids);
            out.facts.skipped.extend(got.skipped.into_iter().map(|mut s| {
                s.index += done_before;
                s
            }));
            done_before += level.len();
        }
        // The other tool's supersessions, skipping what this memory already says.
        let mut records = Vec::new();
        for l in &foreign.links {
            let (Some(&old), new) = (out.ids.get(&l.old), l.new.as_ref().map(|n| out.ids.get(n).copied())) else {
                out.links_dropped += 1;
                continue;
            };
            let new = match new {
                Some(None) => {
                    out.links_dropped += 1;
                    continue;
                }
                Some(Some(n)) => Some(n),
                None => None,
            };
            let target = self.target()?;
            if target.state.entries.get(&old).is_none_or(|e| e.status != crate::state::Status::Valid)
                || new == Some(old)
            {
                continue;
            }
            let at = l.at.unwrap_or(ctx.now);
            records.push(Record {
                kind: Kind::Supersession,
                payload: Payload::Supersession(Supersession {
                    old,
                    old_scope: None,
                    new,
                    reason: l.reason.clone(),
                    method: if new.is_some() { SupersessionMethod::Explicit } else { SupersessionMethod::Outdated },
                    score: None,
                }),
                author: ctx.identity.author_field(),
                created_at: at,
                body: String::new(),
            });
        }
        if !records.is_empty() {
            let mut problems = Vec::new();
            for r in &records {
                problems.extend(crate::record::validate::validate(r));
            }
            if !problems.is_empty() {
                return Err(Error::Invalid(Problems(problems)));
            }
            out.supersessions = records.len();
            let n = records.len();
            self.write_all(records, format!("neo: import {n} supersession{}", if n == 1 { "" } else { "s" }), ctx)?;
        }
        Ok(out)
    }
}
