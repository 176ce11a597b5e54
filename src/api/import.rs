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
