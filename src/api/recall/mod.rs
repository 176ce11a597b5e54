//! Recall and the caches behind it: opening, catching up and rebuilding the indexes, similarity
//! scores for supersession, recall itself with attempts' freshness, and memory as of a time;
//! `documents` the layer from the project's ingested documents.

pub mod documents;

use crate::api::memory::Memory;
use crate::api::write::supersede::SIMILARITY_MARGIN;
use crate::api::write::supersede::SIMILARITY_SHORTLIST;
use crate::error::{Error, Result};
use crate::record::{Payload, Record, RecordId, Timestamp};
use crate::state::State;
use crate::store::ObjectId;

impl Memory {
    /// Where the derived caches live: `<common git dir>/neo/index`, shared by linked worktrees.
    pub fn index_dir(&self) -> std::path::PathBuf {
        self.store.index_dir()
    }

    /// The tips this memory was read from, as commit ids (what the caches are stamped with).
    pub fn tip_ids(&self) -> Vec<String> {
        self.tips.iter().map(|(_, c)| c.to_string()).collect()
    }

    /// Open (catch up, or rebuild) the recall indexes for this memory.
    pub fn open_indexes(
        &self,
        embedder: Option<&mut dyn crate::embed::Embedder>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(crate::index::Indexes, crate::index::Refresh)> {
        self.open_indexes_with(embedder, true, progress)
    }

    /// [`Memory::open_indexes`], leaving the lexical index behind when `lexical` is false (see
    /// [`crate::index::Indexes::open`]).
    pub fn open_indexes_with(
        &self,
        embedder: Option<&mut dyn crate::embed::Embedder>,
        lexical: bool,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(crate::index::Indexes, crate::index::Refresh)> {
        let added_since = |old: &[String]| self.records_added_since(old);
        Ok(crate::index::Indexes::open(
            &self.index_dir(),
            &self.state,
            &self.tip_ids(),
            &added_since,
            embedder,
            lexical,
            progress,
        )?)
    }

    /// [`crate::index::Indexes::refresh`] for this memory: catch caches already open up in place.
    pub fn refresh_indexes(
        &self,
        indexes: &mut crate::index::Indexes,
        embedder: Option<&mut dyn crate::embed::Embedder>,
        lexical: bool,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Option<crate::index::Refresh>> {
        let added_since = |old: &[String]| self.records_added_since(old);
        Ok(indexes.refresh(&self.state, &self.tip_ids(), &added_since, embedder, lexical, progress)?)
    }

    /// The records added between the single old tip `old` and the single current tip, from a tree
    /// diff; `None` when that cannot be told that way (several tips, unrelated history, or a change
    /// that is not an addition).
    fn records_added_since(&self, old: &[String]) -> Option<Vec<RecordId>> {
        let ([old], [(_, new)]) = (old, self.tips.as_slice()) else { return None };
        let old = ObjectId::from_hex(old.as_bytes()).ok()?;
        if let Some(mut added) = self.added_by_own_commits(old, *new) {
            added.sort_by_key(|id| self.state.entries.get(id).map(|e| (e.record.created_at, *id)));
            return Some(added);
        }
        if !self.store.is_ancestor(old, *new).ok()? {
            return None;
        }
        let changes =
            self.store.diff_trees(Some(self.store.tree_of(old).ok()?), Some(self.store.tree_of(*new).ok()?)).ok()?;
        let mut added = Vec::new();
        for c in changes {
            if c.change != "added" {
                return None;
            }
            if let Some(id) = c.path.rsplit('/').next().and_then(|f| f.strip_suffix(".md")).and_then(RecordId::from_hex)
            {
                added.push(id);
            }
        }
        added.sort_by_key(|id| self.state.entries.get(id).map(|e| (e.record.created_at, *id)));
        Some(added)
    }

    /// Delete the caches and build them again.
    pub fn reindex(
        &self,
        embedder: Option<&mut dyn crate::embed::Embedder>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(crate::index::Indexes, crate::index::Refresh)> {
        let dir = self.index_dir();
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|e| Error::Io { context: format!("removing {}", dir.display()), source: e })?;
        }
        self.open_indexes(embedder, progress)
    }

    /// The time of a commit (for `--as-of <commit>`).
    pub fn commit_time(&self, spec: &str) -> Result<Timestamp> {
        let id = self.store.resolve_commit(spec)?;
        self.store.commit_time(id)
    }

    /// Cosine similarity of `record` to the current facts `is_candidate` accepts: by the index for
    /// the nearest [`crate::api::write::supersede::UPDATE_CANDIDATES`] (the frame rule's candidates, and the
    /// report), and exactly for at most [`SIMILARITY_SHORTLIST`] of them. The vector index ranks them with the record's indexed
    /// text ([`crate::index::vector_texts`], embedded once and remembered for the index's own
    /// catch-up). The index's vectors also hold type, scope and tags, which every candidate shares
    /// with the new fact and which only raise the score; so the candidates that come near the
    /// type's threshold (an index score no more than [`SIMILARITY_MARGIN`] under it) are compared
    /// again on subject and body alone. Most writes have none, and embed nothing more.
    pub fn similarity_scores(
        &self,
        indexes: &crate::index::Indexes,
        embedder: &mut dyn crate::embed::Embedder,
        record: &Record,
        is_candidate: &crate::api::write::supersede::CandidateFn<'_>,
    ) -> Result<crate::api::write::supersede::Similarity> {
        use crate::api::write::supersede::{Similarity, UPDATE_CANDIDATES};
        let top = |mut r: Vec<(RecordId, f32)>| {
            r.truncate(UPDATE_CANDIDATES);
            r
        };
        let embed_err = |e| Error::Index(crate::index::IndexError::Embed(e));
        let Some(text) = crate::index::vector_texts(record).into_iter().next() else {
            return Ok(Similarity::Scores { exact: Vec::new(), ranked: Vec::new() });
        };
        let q = embedder.embed(std::slice::from_ref(&text)).map_err(embed_err)?.pop().unwrap_or_default();
        let threshold = match record.as_fact() {
            Some(f) => self.store.supersede_threshold(f.fact_type, crate::api::write::supersede::DEFAULT_THRESHOLD)?,
            None => 0.0,
        };
        // Only candidates that could reach the threshold are compared exactly; the nearest is
        // reported by its indexed score whatever it is. Asked as recall asks (a scan of every
        // vector in an index of up to 16k): the graph search for 512 passages cost a warm add
        // at 10k records 2.2 ms against 1.6 for the scan, and could miss a true neighbour.
        let ranked: Vec<(RecordId, f32)> = indexes
            .search_passages(&q, 256)?
            .into_iter()
            .map(|(id, s, _)| (id, s))
            .filter(|(id, _)| is_candidate(id))
            .collect();
        let near: Vec<RecordId> = ranked
            .iter()
            .copied()
            .filter(|(_, s)| *s >= threshold - SIMILARITY_MARGIN)
            .take(SIMILARITY_SHORTLIST)
            .map(|(id, _)| id)
            .collect();
        if near.is_empty() {
            return Ok(Similarity::Scores { exact: Vec::new(), ranked: top(ranked) });
        }
        let own = |r: &Record| format!("{}\n{}", r.summary(), r.body.trim_end());
        let mut texts = vec![own(record)];
        texts.extend(near.iter().map(|id| own(&self.state.entries[id].record)));
        let vectors = embedder.embed(&texts).map_err(embed_err)?;
        let exact =
            near.into_iter().zip(&vectors[1..]).map(|(id, v)| (id, crate::embed::cosine(&vectors[0], v))).collect();
        Ok(Similarity::Scores { exact, ranked: top(ranked) })
    }
}

/// One scope's memory and its open indexes, for a recall over several scopes.
pub(crate) struct Source<'a> {
    pub scope: crate::scope::Scope,
    pub memory: &'a Memory,
    pub indexes: &'a crate::index::Indexes,
}

/// Both candidate lists of several indexes merged: best score first, one entry per record.
fn merge_hits<T: Copy>(lists: Vec<Vec<(RecordId, f32, T)>>, limit: usize) -> Vec<(RecordId, f32, T)> {
    let mut all: Vec<(RecordId, f32, T)> = lists.into_iter().flatten().collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut seen = std::collections::HashSet::new();
    all.retain(|(id, _, _)| seen.insert(*id));
    all.truncate(limit);
    all
}

/// Both candidate lists, and what expanded them.
type Expanded = (Vec<(RecordId, f32)>, Vec<(RecordId, f32, usize)>, Option<crate::recall::expand::Expansion>);

/// The candidate lists again, expanded once, when the first pass is weak
/// ([`crate::recall::expand`]): the lexical query gains words of the vector side's best records,
/// the query vector moves towards the lexical side's best records' vectors. One more lexical and
/// one more vector query, no embedding; the vector query is `guess`'s when it moved the query
/// the same way (see [`Guess`]).
fn expand(
    parts: &[&crate::index::Indexes],
    state: &State,
    req: &crate::recall::Request,
    query_vector: &[f32],
    (lexical, vector): (Vec<(RecordId, f32)>, Vec<VectorHit>),
    guess: Option<Guess>,
) -> Result<Expanded> {
    use crate::recall::expand as x;
    let pairs: Vec<(RecordId, f32)> = vector.iter().map(|(id, s, _)| (*id, *s)).collect();
    let query = req.query.as_str();
    let Some(reason) = x::weak(req.expand, &lexical, &pairs) else { return Ok((lexical, vector, None)) };
    let words = |text: &str| -> Vec<String> {
        crate::index::lexical::terms(text).into_iter().filter(|t| !t.derived).map(|t| t.text).collect()
    };
    let texts: Vec<Vec<String>> = vector
        .iter()
        .take(x::FEEDBACK)
        .filter_map(|(id, _, _)| state.entries.get(id))
        .filter_map(|e| crate::index::index_text(&e.record))
        .map(|t| words(&t))
        .collect();
    let terms = x::feedback_terms(&words(query), &texts, |w| {
        let mut total = (0, 0);
        for p in parts {
            let (df, n) = p.doc_freq(w).ok()?;
            total = (total.0 + df, total.1 + n);
        }
        Some(total)
    });
    // Each feedback record at the passage the vector side matched best (its first, if the
    // vector side did not find it).
    let (chosen, feedback) =
        vector_feedback(parts, query_vector, &lexical, |id| vector.iter().find(|v| v.0 == *id).map_or(0, |v| v.2));
    let (moved, found) = match guess {
        Some(g) if g.chosen == chosen => (g.moved, Some(g.found)),
        _ => (x::rocchio(query_vector, &feedback), None),
    };
    // A side whose query the feedback left as it was would find the first pass's list again
    // (the same query on the same index), so it is not asked twice: no feedback word (every
    // word of the best records common, as in a memory of one project's similar facts), or no
    // feedback record (the lexical side's best all unrelated to the query).
    let (new_terms, new_vector) = (!terms.is_empty(), moved.as_slice() != query_vector);
    let lexical = if new_terms {
        let mut lex = Vec::new();
        for p in parts {
            let hits = p.search_lexical_expanded(query, &terms, crate::recall::CANDIDATES)?;
            lex.push(hits.into_iter().map(|(id, s)| (id, s, ())).collect());
        }
        merge_hits(lex, crate::recall::CANDIDATES).into_iter().map(|(id, s, ())| (id, s)).collect()
    } else {
        lexical
    };
    let vector = match found {
        _ if !new_vector => vector,
        Some(found) => found,
        None => vector_pass(parts, &moved)?,
    };
    let expansion = x::Expansion { reason, terms: terms.into_iter().map(|t| t.0).collect(), feedback: feedback.len() };
    Ok((lexical, vector, Some(expansion)))
}

/// An expansion's vector side: the lexical side's best [`crate::recall::expand::FEEDBACK`]
/// records, each at the passage `passage_of` gives (record, passage), and the vectors of those
/// the vectors do not call unrelated: a paraphrase shares no words with its answer, and its
/// lexical top three are then incidental matches that would pull the query away from what it
/// means.
fn vector_feedback(
    parts: &[&crate::index::Indexes],
    query_vector: &[f32],
    lexical: &[(RecordId, f32)],
    passage_of: impl Fn(&RecordId) -> usize,
) -> (Vec<(RecordId, usize)>, Vec<Vec<f32>>) {
    let chosen: Vec<(RecordId, usize)> =
        lexical.iter().take(crate::recall::expand::FEEDBACK).map(|(id, _)| (*id, passage_of(id))).collect();
    let feedback = chosen
        .iter()
        .filter_map(|(id, passage)| parts.iter().find_map(|p| p.passage_vector(*id, *passage)))
        .filter(|v| crate::embed::cosine(query_vector, v) >= crate::recall::MIN_SIMILARITY)
        .collect();
    (chosen, feedback)
}

/// Every part's vector candidates for `query`, merged.
fn vector_pass(parts: &[&crate::index::Indexes], query: &[f32]) -> Result<Vec<VectorHit>> {
    let mut found = Vec::new();
    for p in parts {
        found.push(p.search_passages(query, crate::recall::CANDIDATES)?);
    }
    Ok(merge_hits(found, crate::recall::CANDIDATES))
}

/// Every part's lexical candidates for `query`, merged.
fn lexical_pass(parts: &[&crate::index::Indexes], query: &str) -> Result<Vec<(RecordId, f32)>> {
    let mut lexical = Vec::new();
    for p in parts {
        let hits = p.search_lexical(query, crate::recall::CANDIDATES)?;
        lexical.push(hits.into_iter().map(|(id, s)| (id, s, ())).collect());
    }
    Ok(merge_hits(lexical, crate::recall::CANDIDATES).into_iter().map(|(id, s, ())| (id, s)).collect())
}

/// An expansion's vector pass made beside the first one, before it is known whether the first
/// pass is weak: in an index searched through its graph (more than
/// [`crate::index::vectors::EXACT_UP_TO`] vectors) each pass costs a millisecond or two, and the
/// two passes then run on two cores. The guess is that each feedback record's passage is its
/// first (the usual case: a fact short enough for one passage); the expansion uses the guess
/// only if the passages it chooses are those, so that the moved query, and what it found, are
/// the same as if it had been asked after the first pass.
struct Guess {
    chosen: Vec<(RecordId, usize)>,
    moved: Vec<f32>,
    found: Vec<VectorHit>,
}

impl Guess {
    fn make(parts: &[&crate::index::Indexes], query_vector: &[f32], lexical: &[(RecordId, f32)]) -> Result<Guess> {
        let (chosen, feedback) = vector_feedback(parts, query_vector, lexical, |_| 0);
        let moved = crate::recall::expand::rocchio(query_vector, &feedback);
        let found = if moved.as_slice() == query_vector { Vec::new() } else { vector_pass(parts, &moved)? };
        Ok(Guess { chosen, moved, found })
    }
}

/// A vector candidate: record, cosine similarity, the passage that matched best.
type VectorHit = (RecordId, f32, usize);

/// Every candidate's similarity to the query as asked, read from the stored vectors in one pass
/// over each index (no search, no model call): the lexical candidates the vector search did not
/// return (`measured`: otherwise a record that both sides rank just outside the other's top 50
/// counts as unrelated on that side), and, after an expansion (`rescore`), the vector list
/// itself, ranked again. The moved vector only finds candidates: it leans towards the feedback
/// records, and scoring by it ranked them above what the query means (SciFact train nDCG@10
/// 0.7189 scored by the moved vector, docs/recall.md).
fn by_query(
    parts: &[&crate::index::Indexes],
    query: &[f32],
    vector: Vec<VectorHit>,
    lexical: &[(RecordId, f32)],
    rescore: bool,
) -> (Vec<VectorHit>, Vec<VectorHit>) {
    let in_vector: std::collections::HashSet<RecordId> = vector.iter().map(|v| v.0).collect();
    let mut ids: Vec<RecordId> = if rescore { vector.iter().map(|v| v.0).collect() } else { Vec::new() };
    ids.extend(lexical.iter().map(|l| l.0).filter(|id| !in_vector.contains(id)));
    let mut seen = std::collections::HashSet::new();
    let mut all = Vec::new();
    for p in parts {
        all.extend(p.similarities(&ids, query).into_iter().filter(|m| seen.insert(m.0)));
    }
    let (mut again, measured): (Vec<_>, Vec<_>) = all.into_iter().partition(|m| in_vector.contains(&m.0));
    if !rescore {
        return (vector, measured);
    }
    again.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    (again, measured)
}

/// What the indexes of `parts` (one or more scopes) offer for `req`: both candidate lists
/// merged, the query embedded with `embedder` when every part has vectors, a weak first pass
/// expanded once, and every candidate's similarity to the query as asked. `state` is the fold
/// of every part's records (the expansion reads its feedback records there).
pub(crate) fn candidates(
    parts: &[Source<'_>],
    state: &State,
    req: &crate::recall::Request,
    embedder: Option<&mut dyn crate::embed::Embedder>,
) -> Result<crate::recall::Found> {
    // The query's embedding first: while the model embeds it, a catch-up of the lexical index
    // may still be committing behind (`Lexical::add_behind`), and the lexical search waits for it.
    let semantic = parts.iter().all(|p| p.indexes.vectors.is_some());
    let query_vector = match embedder {
        Some(e) if semantic => {
            let q = e.embed(std::slice::from_ref(&req.query)).map_err(crate::index::IndexError::Embed)?;
            Some((e.model_id().to_string(), q.into_iter().next().unwrap_or_default()))
        }
        _ => None,
    };
    let indexes: Vec<&crate::index::Indexes> = parts.iter().map(|p| p.indexes).collect();
    let Some((_, q)) = &query_vector else {
        let lexical = lexical_pass(&indexes, &req.query)?;
        return Ok(crate::recall::Found { lexical, semantic: false, ..Default::default() });
    };
    // Then both sides at once, the lexical one on a second thread (with, in a large index, the
    // expansion's vector pass guessed: see [`Guess`]). Each side gives what it gives alone.
    let guess = req.expand != crate::recall::expand::When::Never && parts.iter().any(|p| p.indexes.searches_graph());
    let indexes = indexes.as_slice();
    let side = || -> Result<_> {
        let lexical = lexical_pass(indexes, &req.query)?;
        // A guess that fails is no guess: the expansion, if there is one, searches again and
        // meets the failure itself.
        let guess = if guess { Guess::make(indexes, q, &lexical).ok() } else { None };
        Ok((lexical, guess))
    };
    let (vector, side) = std::thread::scope(|scope| {
        // A thread that cannot be started leaves the lexical side to this one, after the vectors.
        let beside = std::thread::Builder::new().name("neo-recall".into()).spawn_scoped(scope, side).ok();
        let vector = vector_pass(indexes, q);
        let side = match beside {
            Some(thread) => thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            None => side(),
        };
        (vector, side)
    });
    let (lexical, guess) = side?;
    let (lexical, vector, expanded) = expand(indexes, state, req, q, (lexical, vector?), guess)?;
    let (vector, measured) = by_query(indexes, q, vector, &lexical, expanded.is_some());
    let passages = vector.iter().chain(&measured).map(|(id, _, p)| (*id, *p)).collect();
    Ok(crate::recall::Found {
        lexical,
        vector: vector.into_iter().map(|(id, s, _)| (id, s)).collect(),
        measured: measured.into_iter().map(|(id, s, _)| (id, s)).collect(),
        semantic: true,
        query_vector,
        expanded,
        passages,
    })
}

/// What only the repositories can say of a recall's records: which passage of a long fact
/// matched, the scope a single scope's answer came from, memory a fetch brought and nobody
/// merged, and whether each attempt's check still applies (told against the first part's
/// repository, the project's) and where its task stands now.
pub(crate) fn annotate(
    parts: &[Source<'_>],
    state: &State,
    passages: &std::collections::HashMap<RecordId, usize>,
    out: &mut crate::recall::Recall,
) -> Result<()> {
    let Some(first) = parts.first() else {
        return Err(Error::Internal("a recall over no scope".into()));
    };
    out.scopes = parts.iter().map(|p| p.scope.to_string()).collect();
    for item in out.all_items_mut().filter(|i| i.kind == crate::record::Kind::Fact) {
        // A long fact says which passage of its body matched.
        if let Some(&p) = passages.get(&item.id) {
            let split = crate::index::passages::split(&item.subject, &item.body);
            if let (true, Some(m)) = (split.len() > 1, split.get(p)) {
                item.passage = Some(crate::recall::PassageMatch { index: p, lines: [m.lines.0, m.lines.1] });
            }
        }
    }
    let single_scope = match parts {
        [only] if only.scope != crate::scope::Scope::Project => Some(only.scope.clone()),
        _ => None,
    };
    for item in out.all_items_mut() {
        if let Some(s) = &single_scope {
            item.scope = s.to_string();
        }
        // Memory a fetch brought and nobody merged says so wherever it is shown.
        if let Some(from) = parts.iter().find_map(|p| p.memory.fetched_from(&item.id)) {
            item.scope = format!("{}, fetched from {from}, not merged", item.scope);
        }
    }
    // Attempts say whether their check still applies, and where their task stands now.
    for item in out.items_mut(crate::recall::LayerKind::Attempts).into_iter().flatten() {
        if let Some(Payload::Attempt(a)) = state.entries.get(&item.id).map(|e| &e.record.payload) {
            item.freshness =
                Some(crate::store::freshness(first.memory.store(), a.check.commit.as_deref(), &a.files)?.to_string());
            item.task_status = state
                .iter()
                .filter_map(|e| match &e.record.payload {
                    Payload::Attempt(x) if x.task == a.task => Some(x.check.result.to_string()),
                    _ => None,
                })
                .last();
        }
    }
    Ok(())
}

/// The records only a fetched copy of `parts` holds (not merged): never the newer of two
/// conflicting facts.
pub(crate) fn fetched(parts: &[Source<'_>]) -> Option<std::sync::Arc<std::collections::HashSet<RecordId>>> {
    let fetched: std::collections::HashSet<RecordId> =
        parts.iter().flat_map(|p| p.memory.fetched().keys().copied()).collect();
    (!fetched.is_empty()).then(|| std::sync::Arc::new(fetched))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::write::plan::{Destination, WritePlan};
    use crate::api::write::{AddRequest, WriteContext};
    use crate::store::{Identity, Store, StoreOptions};

    /// The expansion's vector pass made beside the first one ([`Guess`]) changes nothing: with
    /// a guess or without, every query's expanded lists and report are the same, whether the
    /// guess holds (short facts: their first passage is their only one) or not (a long record
    /// whose best passage is a later one is among the lexical side's best), and both cases occur.
    #[test]
    fn an_expansion_guessed_beside_the_first_pass_is_the_expansion_made_after_it() {
        use crate::embed::Embedder;
        use crate::record::{Fact, FactType, Kind};
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut embedder = crate::embed::HashEmbedder::new(64);
        let record = |subject: String, body: String, i: i64| {
            let r = Record {
                kind: Kind::Fact,
                payload: Payload::Fact(Fact::new(FactType::Pattern, subject)),
                author: "Ada <ada@example.com>".into(),
                created_at: Timestamp(1_770_000_000 + i),
                body,
            };
            (r.encode().0, r)
        };
        let topics = ["queue", "cache", "ledger", "deploy", "schema", "token", "shard"];
        let mut records: Vec<(RecordId, Record)> = (0..200)
            .map(|i| {
                let (a, b) = (topics[i % 7], topics[(i / 7) % 7]);
                record(format!("The {a} waits for the {b} in service {}", i % 11), format!("Note {i}."), i as i64)
            })
            .collect();
        // Long records whose later passages are about one topic each.
        for l in 0..4 {
            let body: String = (0..6)
                .map(|p| {
                    format!("## Part {p}\n\n{}\n\n", format!("{} retries part{p} ", topics[(l + p) % 7]).repeat(40))
                })
                .collect();
            records.push(record(format!("Runbook {l}"), body, 500 + l as i64));
        }
        let state = crate::state::fold(records);
        let (indexes, _) = crate::index::Indexes::open(
            &tmp.path().join("i"),
            &state,
            &["t".into()],
            &|_| None,
            Some(&mut embedder),
            true,
            &mut |_, _| {},
        )
        .expect("open");
        let parts = [&indexes];
        let (mut held, mut dropped) = (0, 0);
        for query in [
            "queue retries part3",
            "cache retries part2 service 4",
            "retries part1",
            "deploy retries",
            "ledger waits",
            "schema part5",
            "token",
            "the shard in service 3",
        ] {
            // Words nothing holds lower the best cosine below the expansion's threshold.
            let query = format!("{query} with zebra giraffe okapi walrus and more");
            let query = query.as_str();
            let q = embedder.embed(&[query.to_string()]).expect("embed").remove(0);
            let req = crate::recall::Request {
                query: query.into(),
                k: 10,
                budget: 10_000,
                types: Vec::new(),
                area: None,
                now: Timestamp(1_780_000_000),
                as_of: None,
                origins: None,
                fetched: None,
                fusion: Default::default(),
                floor: 0.0,
                expand: crate::recall::expand::When::Weak,
                pin: None,
            };
            let lexical = lexical_pass(&parts, query).expect("lexical");
            let vector = vector_pass(&parts, &q).expect("vector");
            let guess = Guess::make(&parts, &q, &lexical).expect("guess");
            let (chosen, _) =
                vector_feedback(&parts, &q, &lexical, |id| vector.iter().find(|v| v.0 == *id).map_or(0, |v| v.2));
            let same = guess.chosen == chosen;
            let after = expand(&parts, &state, &req, &q, (lexical.clone(), vector.clone()), None).expect("after");
            let beside = expand(&parts, &state, &req, &q, (lexical, vector), Some(guess)).expect("beside");
            assert_eq!(beside, after, "{query}");
            if after.2.is_some() {
                (held, dropped) = if same { (held + 1, dropped) } else { (held, dropped + 1) };
            }
        }
        assert!(held > 0 && dropped > 0, "the guess held {held} times and was dropped {dropped} times");
    }

    /// What a catch-up of the caches is told was added since an older tip: read from this
    /// process's own commits when one chain of them leads there, the same as the tree diff says;
    /// from the diff when another process wrote in between.
    #[test]
    fn own_commits_say_what_they_added_as_the_trees_do() {
        let dir = crate::store::test_repo();
        let load = || Memory::load(Store::discover(dir.path(), StoreOptions::default()).expect("store")).expect("load");
        let ctx = WriteContext::new(
            Identity { name: "Ada".into(), email: "ada@example.com".into() },
            Timestamp(1_772_366_400),
        );
        let mut memory = load();
        let add = |memory: &mut Memory, subjects: &[&str]| {
            let records = subjects
                .iter()
                .map(|s| {
                    let req =
                        AddRequest { fact_type: "decision".into(), subject: (*s).into(), ..AddRequest::default() };
                    memory.prepare_fact(&req, &ctx).expect("fact")
                })
                .collect();
            memory.apply(WritePlan::one(Destination::ByMode, "neo: add {id}".into(), records), &ctx).expect("apply");
            memory.tips()[0].1
        };
        let first = add(&mut memory, &["Builds run on two cores"]);
        add(&mut memory, &["Releases are tagged", "Builds run on two cores"]);
        let last = add(&mut memory, &["Logs keep 30 days", "Keys rotate monthly"]);
        let own = memory.added_by_own_commits(first, last).expect("one chain of own commits");
        assert_eq!(own.len(), 3, "what was there already is not added again");
        let old = [first.to_string()];
        let told = memory.records_added_since(&old).expect("told");
        let diffed = load().records_added_since(&old).expect("diffed");
        assert_eq!(told, diffed, "in the same order");
        assert!(own.iter().all(|id| told.contains(id)));

        // Another process writes: the chain no longer leads to the tip, and the diff says it.
        let mut other = load();
        let theirs = add(&mut other, &["Queues drain at night"]);
        let mut memory = memory;
        let now = add(&mut memory, &["Deploys need a review"]);
        assert!(memory.added_by_own_commits(theirs, now).is_some(), "ours, on top of theirs");
        assert!(memory.added_by_own_commits(last, now).is_none(), "theirs is in between");
        assert!(memory.added_by_own_commits(first, now).is_none(), "ours, then theirs, then ours");
        let old = [last.to_string()];
        assert_eq!(memory.records_added_since(&old).expect("diffed").len(), 2, "theirs and ours");
    }
}
