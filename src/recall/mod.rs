//! Recall: candidates from both indexes, fused, ranked, sorted into layers, cut to a token budget.
//!
//! Ranking (documented in docs/recall.md):
//! - Candidates: the top [`CANDIDATES`] of the lexical index (BM25) and of the vector index.
//! - Relevance: the query's [`Fusion`] of the two lists (by default, with vectors `0.9 × cosine +
//!   0.1 × (bm25 - floor) / (best bm25 - floor)`, the floor being the last lexical candidate's
//!   score when the list was cut at its limit, else 0; lexical only `bm25 / best bm25`). A
//!   lexical candidate the vector search did not return carries its similarity too, read from
//!   its stored vectors by the caller. A weak first pass is expanded once before ranking
//!   ([`expand`], run by the caller, which owns the indexes), and its candidates are ranked by
//!   their similarity to the query as asked.
//! - Score: `relevance × (0.5 + confidence) × (1 + 0.1 × min(log2(1 + successes), 3))
//!   + 0.02 × exp(-age_days / 180)`.
//! - Layers: constraints (every valid constraint, the matching ones first, at most 2/3 of the
//!   budget), relevant facts (those that say the same words folded into one, [`same_words`]),
//!   attempts (best match per task), invalidated facts that match (with
//!   what replaced them and why), known unknowns.
//! - Budget: tokens are estimated as characters / 4; items that do not fit are counted and the
//!   output says how many were cut.

pub mod conflicts;
mod eval;
pub mod expand;
pub mod layer;
pub mod pin;
pub mod render;

pub use eval::{metrics, rank_flat, Mode};
pub use layer::{Budget, Layer, LayerKind, Layers};

pub use crate::config::DEFAULT_RECALL_FLOOR;
pub use crate::rank::{relevance, score, Fusion, FusionKind, LEXICAL_WEIGHT, MIN_SIMILARITY};
use crate::record::{FactType, Kind, Payload, RecordId, Timestamp};
use crate::scope::Scope;
use crate::state::{Entry, State, Status};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// Candidates taken from each index.
pub const CANDIDATES: usize = 50;

/// Default token budget.
pub const DEFAULT_BUDGET: usize = 12_000;

/// What to recall.
#[derive(Clone, Debug)]
pub struct Request {
    pub query: String,
    /// Relevant facts to show at most.
    pub k: usize,
    pub budget: usize,
    /// Only these fact types (empty: all).
    pub types: Vec<FactType>,
    /// Only facts and attempts with this area label (the record's `scope` field).
    pub area: Option<String>,
    /// The time the answer is for: validity windows and ages are measured against it. With
    /// `as_of`, the caller also folds only the records written by then.
    pub now: Timestamp,
    /// Answer from the memory as it stood at this time: only records written by then, validity
    /// windows measured then.
    pub as_of: Option<Timestamp>,
    /// With several scopes folded together: which scope each record came from (absent: all
    /// from the project). Current facts sharing a key with a fact of a stronger scope
    /// ([`crate::scope::Scope::priority`]) are left out, constraints excepted.
    pub origins: Option<Arc<HashMap<RecordId, Scope>>>,
    /// Records only a fetched copy holds (not merged): never the newer of two conflicting facts.
    pub fetched: Option<Arc<HashSet<RecordId>>>,
    /// How the lexical and vector lists are combined (`neo.recall.fusion`).
    pub fusion: FusionKind,
    /// Facts whose relevance is below this share of the best fact's are not shown
    /// (`crate::config::RECALL_FLOOR`).
    pub floor: f64,
    /// When a first pass is expanded once ([`expand`]; `neo.recall.expand`).
    pub expand: expand::When,
    /// A live session's view ([`pin`]): constraints as they stood when it started, and records
    /// it has not seen marked new.
    pub pin: Option<Arc<pin::Pin>>,
}

/// One recalled record.
#[derive(Clone, Debug, Serialize)]
pub struct Item {
    pub id: RecordId,
    pub kind: Kind,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub fact_type: Option<FactType>,
    pub subject: String,
    pub body: String,
    /// Where the record lives: `project`, `user`, `org` or `session:<name>`.
    pub scope: String,
    /// Its free-form area label (the record's `scope` field).
    pub area: String,
    pub status: Status,
    pub confidence: f64,
    pub successes: u32,
    pub score: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lexical_rank: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_rank: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
    /// For invalidated facts: what replaced them (ids and subjects) and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replaced_by: Vec<Replacement>,
    /// For attempts: the task and its check result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// For attempts: whether the check still applies at HEAD (`fresh`, `stale: …`, `unknown: …`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freshness: Option<String>,
    /// For attempts: the check result of the task's latest attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_status: Option<String>,
    /// Why this fact needs review (a dependency or source replaced, or a conflict).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub needs_review: Vec<String>,
    /// For facts: whole days since a person last confirmed it (`git neo confirm`), or since it
    /// was written when nobody has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unconfirmed_days: Option<u32>,
    /// How well it matched the query (0 to 1), before confidence and age weigh in.
    #[serde(skip)]
    pub relevance: f64,
    /// Current facts shown with this one that answer the same question otherwise (see
    /// [`conflicts`]): newer first, each naming the other.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts_with: Vec<RecordId>,
    /// What the fact is about (its key: `subject / predicate` when written with a slot).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<String>,
    /// For a fact outside its validity window: `expired on …` or `in effect from …`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
    /// Facts linked to this one (extends, derives), in either direction.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub linked: Vec<Link>,
    /// For a fact whose body is longer than the model's window: the passage that matched best.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passage: Option<PassageMatch>,
    /// Sections of ingested documents the fact cites.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cites: Vec<Cited>,
    /// Other current facts of the same scope, type and area that say exactly what this one says
    /// (case, spacing, punctuation and a heading turn marker aside: the same line said in several
    /// sessions, `[D3:1]` and `[D9:1]`), folded into this one so that they do not fill the answer
    /// with copies ([`same_words`]). A fact that differs in a number, a unit, a name or a
    /// negation is never folded.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub same_words: Vec<RecordId>,
    /// Current facts of weaker scopes that hold this fact's key, left out because this one
    /// answers for them (a session's note over the project's fact): said, so that the reader
    /// knows what it hides.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<Override>,
    /// Written since the live session asking started (by another writer): shown, not yet taken
    /// in ([`pin`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub new_since_session: bool,
}

/// A fact a stronger scope's fact with the same key answers for.
#[derive(Clone, Debug, Serialize)]
pub struct Override {
    pub id: RecordId,
    /// Where it lives: `project`, `user`, `org`.
    pub scope: String,
    pub subject: String,
}

/// Which passage of a long body matched the query.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PassageMatch {
    /// The passage's number, from 0.
    pub index: usize,
    /// Its first and last line in the body (1-based, inclusive).
    pub lines: [usize; 2],
}

/// A fact linked to a recalled fact.
#[derive(Clone, Debug, Serialize)]
pub struct Link {
    /// `extends`, `extended-by`, `derives-from`, `derived-by`, `updates`, `updated-by`.
    pub relation: &'static str,
    pub id: RecordId,
    pub subject: String,
    pub status: Status,
}

/// What replaced an invalidated fact.
#[derive(Clone, Debug, Serialize)]
pub struct Replacement {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<RecordId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    pub reason: String,
}

/// How familiar the query is to the memory: a cue for how much reasoning effort to spend.
#[derive(Clone, Debug, Serialize)]
pub struct Familiarity {
    /// `high`, `medium`, `low` or `none`.
    pub level: &'static str,
    /// Cosine similarity of the best vector match (absent without a model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_similarity: Option<f32>,
    /// Current confidence of the best match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_confidence: Option<f64>,
}

impl Familiarity {
    /// How familiar a query is, from its best item and the best vector match's cosine.
    fn of(best: Option<&Item>, best_similarity: Option<f32>) -> Familiarity {
        match (best, best_similarity) {
            (None, _) => Familiarity { level: "none", best_similarity, best_confidence: None },
            (Some(b), sim) => {
                let s = sim.unwrap_or(if b.lexical_rank == Some(0) { 0.6 } else { 0.4 });
                let level = if s >= 0.75 && b.confidence >= 0.6 {
                    "high"
                } else if s >= 0.5 {
                    "medium"
                } else {
                    "low"
                };
                Familiarity { level, best_similarity: sim, best_confidence: Some(b.confidence) }
            }
        }
    }
}

/// The layered answer (its JSON: `layer.rs`).
#[derive(Clone, Debug)]
pub struct Recall {
    pub query: String,
    /// Whether vector search took part (false: lexical only).
    pub semantic: bool,
    /// What each layer shows, by [`LayerKind`].
    pub layers: Layers,
    pub familiarity: Familiarity,
    pub budget: usize,
    pub tokens: usize,
    /// Items left out to stay within the budget (0 when nothing was cut).
    pub cut: usize,
    /// The scopes this answer was read from (set by the caller that read them).
    pub scopes: Vec<String>,
    /// Set when the first pass was weak and recall expanded the query once ([`expand`]): why,
    /// and with what.
    pub expanded: Option<expand::Expansion>,
    /// The embedded query (model id, vector), so the Construct search does not embed it again.
    pub query_vector: Option<(String, Vec<f32>)>,
    /// Candidates the lexical and the vector index offered before ranking (for telemetry).
    pub candidates: [usize; 2],
    /// Memory changed under the live session asking ([`pin`]); set by the session.
    pub stale: Option<pin::Stale>,
}

/// A matching section of an ingested document.
#[derive(Clone, Debug, Serialize)]
pub struct DocumentSection {
    pub source: RecordId,
    pub path: String,
    pub heading: String,
    pub lines: [u32; 2],
    pub score: f32,
    pub excerpt: String,
}

/// A section a fact cites.
#[derive(Clone, Debug, Serialize)]
pub struct Cited {
    pub source: RecordId,
    pub path: String,
    pub section: String,
    /// Its lines in the cited version (absent when that version has no such section).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<[u32; 2]>,
}

/// Per candidate: lexical rank, vector rank, cosine similarity, BM25 score.
#[derive(Clone, Copy, Debug, Default)]
struct Rank {
    lexical: Option<usize>,
    vector: Option<usize>,
    similarity: Option<f32>,
    bm25: Option<f32>,
}

type Ranks = HashMap<RecordId, Rank>;

fn ranks_of(lexical: &[(RecordId, f32)], vector: &[(RecordId, f32)]) -> Ranks {
    let mut ranks: Ranks = HashMap::new();
    for (r, (id, s)) in lexical.iter().enumerate() {
        let e = ranks.entry(*id).or_default();
        e.lexical = Some(r);
        e.bm25 = Some(*s);
    }
    for (r, (id, sim)) in vector.iter().enumerate() {
        let e = ranks.entry(*id).or_default();
        e.vector = Some(r);
        e.similarity = Some(*sim);
    }
    ranks
}

fn item(e: &Entry, state: &State, rank: Rank, fusion: &Fusion, now: Timestamp) -> Item {
    let Rank { lexical: lexical_rank, vector: vector_rank, similarity, bm25 } = rank;
    let (fact_type, subject, area, task, check) = match &e.record.payload {
        Payload::Fact(f) => (Some(f.fact_type), f.subject.clone(), f.scope.clone(), None, None),
        Payload::Attempt(a) => {
            (None, a.action.clone(), a.scope.clone(), Some(a.task.clone()), Some(a.check.result.to_string()))
        }
        _ => (None, e.record.summary(), String::new(), None, None),
    };
    let age_days = (now.0 - e.record.created_at.0) as f64 / 86_400.0;
    let relevance = fusion.relevance(bm25, lexical_rank, similarity, vector_rank);
    // Facts and attempts carry a confidence outcomes move; anything else reads as the middle.
    let confidence = if matches!(e.record.kind, Kind::Fact | Kind::Attempt) { e.confidence.as_f64() } else { 0.5 };
    let replaced_by =
        if matches!(e.status, Status::Superseded | Status::Outdated) { replacements(e, state) } else { Vec::new() };
    let window = match e.record.as_fact() {
        Some(f) if !e.in_effect_at(now) => Some(match (f.valid_from, f.valid_to) {
            (Some(from), _) if now < from => format!("in effect from {from}"),
            (_, Some(to)) => format!("expired on {to}"),
            _ => "outside its validity window".to_string(),
        }),
        _ => None,
    };
    Item {
        id: e.id,
        kind: e.record.kind,
        fact_type,
        subject,
        body: e.record.body.trim_end().to_string(),
        scope: Scope::Project.to_string(),
        area,
        status: e.status,
        confidence,
        successes: e.successes,
        score: score(relevance, confidence, e.successes, age_days),
        relevance,
        lexical_rank,
        vector_rank,
        similarity,
        replaced_by,
        task,
        check,
        freshness: None,
        task_status: None,
        needs_review: e.needs_review.iter().map(|f| f.to_string()).collect(),
        unconfirmed_days: (e.record.kind == Kind::Fact).then(|| e.unconfirmed_days(now)),
        conflicts_with: Vec::new(),
        slot: e.record.as_fact().and_then(|f| f.key.clone()),
        window,
        linked: Vec::new(),
        passage: None,
        cites: cited(e, state),
        same_words: Vec::new(),
        overrides: Vec::new(),
        new_since_session: false,
    }
}

/// The sections `e` cites, with where they are.
fn cited(e: &Entry, state: &State) -> Vec<Cited> {
    let Some(f) = e.record.as_fact() else { return Vec::new() };
    f.cites
        .iter()
        .map(|c| {
            let source = state.entries.get(&c.id).and_then(|s| s.record.as_source());
            Cited {
                source: c.id,
                path: source.map(|s| s.path.clone()).unwrap_or_default(),
                section: c.section.clone(),
                lines: source.and_then(|s| s.section(&c.section)).map(|s| [s.lines.start, s.lines.end]),
            }
        })
        .collect()
}

/// The facts linked to `id` by relations, both ways (`linked_to` is the state's reverse index).
fn links(id: RecordId, state: &State) -> Vec<Link> {
    use crate::record::RelationType;
    let word = |rel: RelationType, outgoing: bool| match (rel, outgoing) {
        (RelationType::Extends, true) => "extends",
        (RelationType::Extends, false) => "extended-by",
        (RelationType::Derives, true) => "derives-from",
        (RelationType::Derives, false) => "derived-by",
        (RelationType::Updates, true) => "updates",
        (RelationType::Updates, false) => "updated-by",
    };
    let Some(e) = state.entries.get(&id) else { return Vec::new() };
    let outgoing = e.record.as_fact().map(|f| f.relations.iter().map(|r| (r.rel, r.id, true)).collect::<Vec<_>>());
    let incoming = state.linked_to(id).iter().map(|(rel, from)| (*rel, *from, false));
    outgoing
        .unwrap_or_default()
        .into_iter()
        .chain(incoming)
        .filter_map(|(rel, other, out)| {
            let o = state.entries.get(&other)?;
            (o.status != Status::Retracted).then(|| Link {
                relation: word(rel, out),
                id: other,
                subject: o.record.summary(),
                status: o.status,
            })
        })
        .collect()
}

/// The supersession records naming `e` as old, as replacements.
fn replacements(e: &Entry, state: &State) -> Vec<Replacement> {
    // Ordered as the scan of every entry by id was, which this look-up replaced.
    let mut naming: Vec<&Entry> = state.supersessions_of(e.id).iter().filter_map(|id| state.entries.get(id)).collect();
    naming.sort_by_key(|s| s.id);
    naming
        .into_iter()
        .filter(|s| s.status == Status::Valid)
        .filter_map(|s| match &s.record.payload {
            Payload::Supersession(sup) if sup.old == e.id => Some(Replacement {
                id: sup.new,
                subject: sup.new.and_then(|n| state.entries.get(&n)).map(|n| n.record.summary()),
                reason: sup.reason.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// What a fact says, for folding copies: its subject and body, lowercased, with every run of
/// spaces and punctuation made one space, and a turn marker heading the subject (`[D3:1]`) left
/// out, since it says where the line was said, not what. Everything else counts: numbers, units,
/// names and negations ("within 30 minutes" and "within 5 minutes" are two answers, never one).
/// `None` for a fact with no words at all.
pub fn same_words(item: &Item) -> Option<String> {
    let subject = item.subject.trim_start();
    let subject = match subject.strip_prefix('[').and_then(|rest| rest.split_once(']')) {
        Some((marker, rest)) if marker.len() <= 24 && !marker.contains(char::is_whitespace) => rest,
        _ => subject,
    };
    let mut out = String::with_capacity(subject.len() + item.body.len() + 1);
    for c in subject.chars().chain(std::iter::once('\n')).chain(item.body.chars()) {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with(' ') {
            out.push(' ');
        }
    }
    let words = out.trim_end();
    (!words.is_empty()).then(|| words.to_string())
}

/// What the indexes offered for a query, before ranking (record id, raw score; best first).
#[derive(Clone, Debug, Default)]
pub struct Found {
    pub lexical: Vec<(RecordId, f32)>,
    /// Empty when no model is available.
    pub vector: Vec<(RecordId, f32)>,
    /// The similarity of lexical candidates that the vector search did not return (they keep no
    /// vector rank).
    pub measured: Vec<(RecordId, f32)>,
    /// Whether vector search took part.
    pub semantic: bool,
    /// The embedded query (model id, vector).
    pub query_vector: Option<(String, Vec<f32>)>,
    /// How the first pass was expanded, when it was weak.
    pub expanded: Option<expand::Expansion>,
    /// For records found by a passage of their body: which one matched best.
    pub passages: HashMap<RecordId, usize>,
}

/// The memory's layers ranked for a request, before the budget: [`Ranked::fit`] hands each out
/// once, then [`Ranked::into_recall`] makes the answer.
pub struct Ranked<'s> {
    state: &'s State,
    req: &'s Request,
    fusion: Fusion,
    /// Every constraint in force ([`Constraints`]); items are built only for those that fit.
    constraints: Constraints<'s>,
    facts: Vec<Item>,
    attempts: Vec<Item>,
    invalidated: Vec<Item>,
    known_unknowns: Vec<Item>,
    familiarity: Familiarity,
    found: Found,
}

/// Rank `state`'s records for `req` from what the indexes `found`.
pub fn rank<'s>(state: &'s State, req: &'s Request, found: Found) -> Ranked<'s> {
    let Found { lexical, vector, measured, semantic, .. } = &found;
    let mut ranks = ranks_of(lexical, vector);
    for (id, sim) in measured {
        if let Some(r) = ranks.get_mut(id).filter(|r| r.similarity.is_none()) {
            r.similarity = Some(*sim);
        }
    }
    let best_lexical = lexical.first().map(|(_, s)| *s).unwrap_or(0.0);
    let worst_lexical = lexical.last().map_or(0.0, |l| l.1);
    let fusion = Fusion::new(req.fusion, &req.query, best_lexical, *semantic)
        .with_ranges(worst_lexical, vector.first().map_or(1.0, |v| v.1), vector.last().map_or(0.0, |v| v.1))
        .with_lexical_floor(if lexical.len() >= CANDIDATES { worst_lexical } else { 0.0 });
    let type_ok = |e: &Entry| match e.record.as_fact() {
        Some(f) => req.types.is_empty() || req.types.contains(&f.fact_type),
        None => req.types.is_empty(),
    };
    let shadowed = shadowed(state, req.origins.as_deref());
    let scope_ok = |e: &Entry| in_area(e, req.area.as_deref());
    let mut matched: Vec<Item> = ranks
        .iter()
        .filter_map(|(id, rank)| state.entries.get(id).map(|e| (e, *rank)))
        .filter(|(e, _)| type_ok(e) && scope_ok(e) && e.status != Status::Retracted && !shadowed.contains_key(&e.id))
        // Vector search always returns neighbours, related or not: a record that only the vector
        // side found must be at least somewhat similar to count as a match.
        .filter(|(_, rank)| rank.lexical.is_some() || rank.similarity.is_some_and(|s| s >= MIN_SIMILARITY))
        .map(|(e, rank)| item(e, state, rank, &fusion, req.now))
        .collect();
    matched.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));

    // Constraints always apply: every valid one, the matching ones first. Scores are computed on
    // the state's rows and items are built only for those that fit the budget (a memory can hold
    // thousands of constraints).
    let constraints = ranked_constraints(state, req, &ranks, &fusion);
    let Sorted { facts, known_unknowns, invalidated, attempts } = sorted(matched, state, req, &shadowed);
    let best_constraint = constraints
        .matched
        .iter()
        .filter(|(_, _, r)| r.lexical.is_some() || r.vector.is_some())
        .min_by(|a, b| constraint_order(a, b))
        .and_then(|(_, c, r)| state.entries.get(&c.id).map(|e| item(e, state, *r, &fusion, req.now)));
    let familiarity = Familiarity::of(facts.first().or(best_constraint.as_ref()), vector.first().map(|(_, s)| *s));
    Ranked { state, req, fusion, constraints, facts, attempts, invalidated, known_unknowns, familiarity, found }
}

impl Ranked<'_> {
    /// The query's vector, when the model embedded it (for the layers recalled from elsewhere).
    pub fn query_vector(&self) -> Option<&(String, Vec<f32>)> {
        self.found.query_vector.as_ref()
    }

    /// The items of the memory's layer `kind` that fit what is left of `budget` (empty for the
    /// layers that are not the memory's, and for a layer handed out already).
    pub fn fit(&mut self, kind: LayerKind, budget: &mut Budget) -> Layer {
        let items = match kind {
            LayerKind::Constraints => {
                // Items for constraints are built only for those that fit: the estimate is read
                // from the state's row. A memory can hold tens of thousands of constraints, and
                // sorting them all was 1 to 2 ms of a recall at 100k records: they are put in
                // order only as far as the budget reads them (`Budget::fit_best_first`).
                let Constraints { mut matched, rest } = std::mem::take(&mut self.constraints);
                let chars = |c: &crate::state::ConstraintRow| c.chars + layer::RECORD_MARKUP;
                let taken: Vec<(f64, &crate::state::ConstraintRow, Rank)> = if rest.is_empty() {
                    budget
                        .fit_best_first(kind, &mut matched, |(_, c, _)| chars(c), constraint_order)
                        .into_iter()
                        .copied()
                        .collect()
                } else {
                    // The matched ones best first, merged with the rest in the order they come
                    // (newest first), each of those scored only as the merge reaches it.
                    matched.sort_by(constraint_order);
                    let smallest = matched.iter().map(|m| m.1).chain(rest.iter().copied()).map(chars).min();
                    let total = matched.len() + rest.len();
                    let (fusion, now) = (&self.fusion, self.req.now);
                    let mut rest = rest
                        .into_iter()
                        .map(|c| (constraint_score(c, Rank::default(), fusion, now), c, Rank::default()))
                        .peekable();
                    let mut matched = matched.into_iter().peekable();
                    let merged = std::iter::from_fn(|| match (matched.peek(), rest.peek()) {
                        (Some(m), Some(r)) if constraint_order(m, r) == std::cmp::Ordering::Greater => rest.next(),
                        (Some(_), _) => matched.next(),
                        (None, _) => rest.next(),
                    });
                    budget.fit_in_order(kind, merged, total, smallest.unwrap_or(0), |(_, c, _)| chars(c))
                };
                let shown = taken
                    .into_iter()
                    .filter_map(|(_, c, rank)| {
                        let e = self.state.entries.get(&c.id)?;
                        Some(item(e, self.state, rank, &self.fusion, self.req.now))
                    })
                    .collect();
                return Layer::Records(shown);
            }
            LayerKind::Facts => std::mem::take(&mut self.facts),
            LayerKind::Attempts => std::mem::take(&mut self.attempts),
            LayerKind::Invalidated => std::mem::take(&mut self.invalidated),
            LayerKind::KnownUnknowns => std::mem::take(&mut self.known_unknowns),
            LayerKind::Documents | LayerKind::Construct => return Layer::empty(kind),
        };
        Layer::Records(budget.fit(kind, items))
    }

    /// The answer from the layers shown: the facts linked to what is shown, a live session's
    /// constraints as they stood, and each record's scope when several were read.
    pub fn into_recall(self, mut layers: Layers, budget: Budget) -> Recall {
        let Ranked { state, req, familiarity, found, .. } = self;
        // Linked facts are shown with what is shown (found after the budget cut, so only for those).
        for kind in [LayerKind::Constraints, LayerKind::Facts, LayerKind::Invalidated, LayerKind::KnownUnknowns] {
            if let Layer::Records(items) = layers.get_mut(kind) {
                for i in items {
                    i.linked = links(i.id, state);
                }
            }
        }
        let mut out = Recall {
            query: req.query.clone(),
            semantic: found.semantic,
            layers,
            familiarity,
            budget: budget.limit,
            tokens: budget.used,
            cut: budget.cut,
            scopes: Vec::new(),
            expanded: found.expanded,
            query_vector: found.query_vector,
            candidates: [found.lexical.len(), found.vector.len()],
            stale: None,
        };
        if let Some(pin) = &req.pin {
            for i in out.all_items_mut() {
                i.new_since_session = !pin.has_seen(&i.id);
            }
            // The session's constraints are shown as they stood: in force, with no replacement it
            // has not taken in, and not among what is no longer true.
            let mut held = HashSet::new();
            for c in out.items_mut(LayerKind::Constraints).into_iter().flatten() {
                if c.status != Status::Valid {
                    c.status = Status::Valid;
                    c.replaced_by.clear();
                }
                held.insert(c.id);
            }
            if let Some(invalidated) = out.items_mut(LayerKind::Invalidated) {
                invalidated.retain(|i| !held.contains(&i.id));
            }
        }
        if let Some(origins) = &req.origins {
            for i in out.all_items_mut() {
                if let Some(s) = origins.get(&i.id) {
                    i.scope = s.to_string();
                }
            }
        }
        out
    }
}

/// Every constraint in force for a request, in two parts: those a candidate list found, scored
/// (in no order: [`Ranked::fit`] puts them in [`constraint_order`] as far as the budget reads),
/// and the rest, whose score is the recency term alone (`rank::score` with no relevance), in
/// that score's order already: newest first ([`State::constraints_newest_first`]), those dated
/// at or after the request's time (all scoring the term's most) by id. A memory can hold tens of
/// thousands of constraints, and scoring and ordering every one on every call was a tenth of a
/// warm recall at 100k records. When a fusion gives a record no list found some relevance, the
/// rest's order is not the recency term's, and every constraint is scored as a matched one.
#[derive(Default)]
struct Constraints<'s> {
    matched: Vec<(f64, &'s crate::state::ConstraintRow, Rank)>,
    rest: Vec<&'s crate::state::ConstraintRow>,
}

/// A constraint's score, from its row.
fn constraint_score(c: &crate::state::ConstraintRow, rank: Rank, fusion: &Fusion, now: Timestamp) -> f64 {
    let age = (now.0 - c.created_at.0) as f64 / 86_400.0;
    score(
        fusion.relevance(rank.bm25, rank.lexical, rank.similarity, rank.vector),
        c.confidence.as_f64(),
        c.successes,
        age,
    )
}

/// Every constraint in force for `req` (as a live session sees it, with `req.pin`): constraints
/// always apply, so all are weighed and the budget takes the best that fit ([`Constraints`]).
fn ranked_constraints<'s>(
    state: &'s State,
    req: &Request,
    ranks: &HashMap<RecordId, Rank>,
    fusion: &Fusion,
) -> Constraints<'s> {
    let scope_ok = |e: &Entry| in_area(e, req.area.as_deref());
    let constraint_type = req.types.is_empty() || req.types.contains(&FactType::Constraint);
    if !constraint_type {
        return Constraints::default();
    }
    // A live session keeps its constraints as they stood when it started: seen, and valid or
    // made invalid only by records it has not seen. What the rows are to what it had seen at
    // its start is kept by the state between recalls; its own writes are asked here.
    let pinned: Option<Vec<bool>> = req.pin.as_ref().map(|p| {
        state.with_pinned_rows(
            p.version(),
            |id| p.started_with(id),
            |rows, known| {
                rows.iter()
                    .zip(known)
                    .map(|(c, k)| {
                        let seen = k.in_base || p.took_in(&c.id);
                        match (&c.status, &k.replaced_by) {
                            (Status::Valid, _) => seen,
                            (_, Some((by_in_base, by))) => seen && !by_in_base && !by.iter().any(|b| p.took_in(b)),
                            (_, None) => false,
                        }
                    })
                    .collect()
            },
        )
    });
    let rows = state.constraint_rows();
    let in_force = |at: usize| {
        let c = &rows[at];
        (match &pinned {
            Some(kept) => kept.get(at) == Some(&true),
            None => c.status == Status::Valid,
        }) && c.in_effect_at(req.now)
            && (req.area.is_none() || state.entries.get(&c.id).is_some_and(scope_ok))
    };
    let none = Rank::default();
    if fusion.relevance(none.bm25, none.lexical, none.similarity, none.vector) != 0.0 {
        let matched = (0..rows.len())
            .filter(|&at| in_force(at))
            .map(|at| {
                let c = &rows[at];
                let rank = ranks.get(&c.id).copied().unwrap_or_default();
                (constraint_score(c, rank, fusion, req.now), c, rank)
            })
            .collect();
        return Constraints { matched, rest: Vec::new() };
    }
    let mut found = vec![false; rows.len()];
    let mut matched = Vec::new();
    for (id, rank) in ranks {
        if let Some(at) = state.constraint_row_of(id) {
            found[at] = true;
            if in_force(at) {
                matched.push((constraint_score(&rows[at], *rank, fusion, req.now), &rows[at], *rank));
            }
        }
    }
    let mut rest: Vec<&crate::state::ConstraintRow> = state
        .constraints_newest_first()
        .iter()
        .map(|&at| at as usize)
        .filter(|&at| !found[at] && in_force(at))
        .map(|at| &rows[at])
        .collect();
    // Dated at or after the request's time: no age, the same score, so by id.
    let undated = rest.partition_point(|c| c.created_at >= req.now);
    rest[..undated].sort_by_key(|c| c.id);
    Constraints { matched, rest }
}

/// Constraints best first: by score, then by id.
fn constraint_order(
    a: &(f64, &crate::state::ConstraintRow, Rank),
    b: &(f64, &crate::state::ConstraintRow, Rank),
) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then(a.1.id.cmp(&b.1.id))
}

/// Whether `e` carries the area label `area` (any, when `None`).
fn in_area(e: &Entry, area: Option<&str>) -> bool {
    area.is_none_or(|s| match &e.record.payload {
        Payload::Fact(f) => f.scope == s,
        Payload::Attempt(a) => a.scope == s,
        _ => false,
    })
}

/// The matched items sorted into the layers: relevant facts (past the relevance floor, copies
/// folded, at most `k`, with what they override and their conflicts), known unknowns about the
/// question, what is no longer true, and each task's best attempt.
struct Sorted {
    facts: Vec<Item>,
    known_unknowns: Vec<Item>,
    invalidated: Vec<Item>,
    attempts: Vec<Item>,
}

fn sorted(matched: Vec<Item>, state: &State, req: &Request, shadowed: &HashMap<RecordId, RecordId>) -> Sorted {
    let query_words = content_words(&req.query);
    // The relevance floor: facts that match far worse than the best one are fillers, not answers.
    let is_fact = |it: &Item| {
        it.kind == Kind::Fact
            && it.status == Status::Valid
            && it.window.is_none()
            && !matches!(it.fact_type, Some(FactType::Constraint | FactType::KnownUnknown))
    };
    let best_relevance = matched.iter().filter(|it| is_fact(it)).map(|it| it.relevance).fold(0.0, f64::max);
    let floor = req.floor.clamp(0.0, 1.0) * best_relevance;
    let mut facts = Vec::new();
    let mut known_unknowns = Vec::new();
    let mut invalidated = Vec::new();
    let mut best_attempt: BTreeMap<String, Item> = BTreeMap::new();
    // What each shown fact says (its words), with where it is filed (scope, type, area), to fold
    // the facts that say it again there.
    let mut said: HashMap<(u8, Option<FactType>, String, String), usize> = HashMap::new();
    let origin_of = |id: RecordId| req.origins.as_ref().and_then(|o| o.get(&id)).map_or(2, Scope::priority);
    for it in matched {
        match (it.kind, it.status, it.fact_type) {
            // Outside its validity window a fact is not true now: it goes with the invalidated.
            (Kind::Fact, Status::Valid, _) if it.window.is_some() => invalidated.push(it),
            (Kind::Fact, Status::Valid, Some(FactType::Constraint)) => {}
            // A known unknown is a warning: shown (and counted as retrieved) only when it is
            // about the question itself, not when it shares a word or two with it.
            (Kind::Fact, Status::Valid, Some(FactType::KnownUnknown)) if about_the_question(&it, &query_words) => {
                known_unknowns.push(it)
            }
            (Kind::Fact, Status::Valid, Some(FactType::KnownUnknown)) => {}
            (Kind::Fact, Status::Valid, _) if !facts.is_empty() && is_fact(&it) && it.relevance < floor => {}
            // Past `k` the facts are cut anyway: their words are not read.
            (Kind::Fact, Status::Valid, _) if facts.len() >= req.k => facts.push(it),
            // Copies are folded within one scope, type and area only: each scope is a source of
            // its own (the reader is told where every answer came from), and the same sentence
            // filed under two areas says something of each.
            (Kind::Fact, Status::Valid, _) => {
                match same_words(&it).map(|w| (origin_of(it.id), it.fact_type, it.area.clone(), w)) {
                    Some(said_where) => match said.get(&said_where) {
                        Some(&shown) => facts[shown].same_words.push(it.id),
                        None => {
                            said.insert(said_where, facts.len());
                            facts.push(it);
                        }
                    },
                    None => facts.push(it),
                }
            }
            (Kind::Fact, Status::Superseded | Status::Outdated, _) => invalidated.push(it),
            (Kind::Attempt, _, _) => {
                let task = it.task.clone().unwrap_or_default();
                if best_attempt.get(&task).is_none_or(|b| b.score < it.score) {
                    best_attempt.insert(task, it);
                }
            }
            _ => {}
        }
    }
    facts.truncate(req.k);
    for f in &mut facts {
        f.overrides = shadowed
            .iter()
            .filter(|(_, by)| **by == f.id)
            .filter_map(|(hidden, _)| state.entries.get(hidden))
            .map(|e| Override {
                id: e.id,
                scope: req.origins.as_ref().and_then(|o| o.get(&e.id)).unwrap_or(&Scope::Project).to_string(),
                subject: e.record.summary(),
            })
            .collect();
        f.overrides.sort_by_key(|o| o.id);
    }
    conflicts::mark(&mut facts, state, &|id| req.fetched.as_ref().is_some_and(|f| f.contains(id)));
    let mut attempts: Vec<Item> = best_attempt.into_values().collect();
    attempts.sort_by(|a, b| b.score.total_cmp(&a.score));
    Sorted { facts, known_unknowns, invalidated, attempts }
}

/// Days without a confirmation from which recall's markdown says how long a fact has gone
/// unchecked (the JSON always has the number).
pub const UNCONFIRMED_NOTE_DAYS: u32 = 180;

/// Cosine from which a known unknown is about the question (above [`MIN_SIMILARITY`], which
/// lets a fact in as a candidate).
pub const KNOWN_UNKNOWN_SIMILARITY: f32 = 0.5;
/// Share of the question's content words a known unknown must hold to be about it lexically.
pub const KNOWN_UNKNOWN_WORDS: f64 = 0.5;

/// A question's words that say what it is about: lowercased, three letters or more, stop words
/// out, a plural or `-ing`/`-ed` ending cut from longer words (`searching` and `search` meet).
fn content_words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !crate::index::lexical::is_stop(w))
        .map(|w| {
            let cut = ["ing", "ed", "es", "s"].iter().find(|e| w.len() > e.len() + 3 && w.ends_with(*e));
            match cut {
                Some(e) => w[..w.len() - e.len()].to_string(),
                None => w,
            }
        })
        .collect()
}

/// Whether a known unknown is about the question: close to it in the model's space, or holding
/// most of its content words.
fn about_the_question(it: &Item, query_words: &HashSet<String>) -> bool {
    if it.similarity.is_some_and(|s| s >= KNOWN_UNKNOWN_SIMILARITY) {
        return true;
    }
    if query_words.is_empty() {
        return it.lexical_rank.is_some();
    }
    let have = content_words(&format!("{}\n{}", it.subject, it.body));
    query_words.iter().filter(|w| have.contains(*w)).count() as f64 / query_words.len() as f64 >= KNOWN_UNKNOWN_WORDS
}

/// Current non-constraint facts whose key a current fact of a stronger scope also holds, each
/// with the fact that answers for it: the stronger one answers (project over org over user; a
/// session's notes over all).
fn shadowed(state: &State, origins: Option<&HashMap<RecordId, Scope>>) -> HashMap<RecordId, RecordId> {
    let Some(origins) = origins else { return HashMap::new() };
    let mut out = HashMap::new();
    // Only a key two facts carry can shadow anything (the index spares a look at every record).
    for ids in state.keyed().values().filter(|ids| ids.len() > 1) {
        let live: Vec<(u8, Timestamp, RecordId)> = ids
            .iter()
            .filter_map(|id| state.entries.get(id))
            .filter(|e| {
                e.status == Status::Valid && e.record.as_fact().is_some_and(|f| f.fact_type != FactType::Constraint)
            })
            .map(|e| (origins.get(&e.id).map_or(2, Scope::priority), e.record.created_at, e.id))
            .collect();
        // The strongest scope of the key and, among its facts, the newest (by id when tied).
        let Some(strongest) = live.iter().max().copied() else { continue };
        out.extend(live.iter().filter(|(p, ..)| *p < strongest.0).map(|(_, _, id)| (*id, strongest.2)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Fact, Record};

    fn fact(subject: &str, at: i64) -> (RecordId, Record) {
        let r = Record {
            kind: Kind::Fact,
            payload: Payload::Fact(Fact::new(FactType::Decision, subject.to_string())),
            author: "T <t@example.com>".into(),
            created_at: Timestamp(1_770_000_000 + at),
            body: String::new(),
        };
        (r.encode().0, r)
    }

    #[test]
    fn facts_that_say_the_same_words_are_shown_once_with_the_others_named() {
        let records = [
            fact("[D1:1] Jordan: Let me update you on the launch timeline.", 0),
            fact("[D2:1] Jordan: Let me update you on the launch timeline.", 1),
            fact("[D3:1] Jordan: Let me update you on the launch timeline.", 2),
            fact("[D1:3] Jordan: The final launch date is Monday March 18th.", 3),
            fact("Migration 42 adds a launch table", 4),
            fact("Migration 43 drops the launch table", 5),
        ];
        let ids: Vec<RecordId> = records.iter().map(|r| r.0).collect();
        let out = recall_all(&records, "launch", 5);
        let shown: Vec<RecordId> = out.items(LayerKind::Facts).iter().map(|f| f.id).collect();
        assert_eq!(shown.len(), 4, "three copies are one: {shown:?}");
        let copy = out.items(LayerKind::Facts).iter().find(|f| f.subject.contains("update you")).expect("the line");
        assert_eq!(copy.same_words.len(), 2, "the other two are named");
        assert!(shown.contains(&ids[3]) && shown.contains(&ids[4]) && shown.contains(&ids[5]), "different words stay");
        let md = render::markdown(&out);
        assert!(md.contains("also said in the same words by"), "{md}");
    }

    /// A request for `query` as the tests ask it: a budget every layer fits in, no expansion.
    fn request(query: &str, k: usize, pin: Option<Arc<pin::Pin>>) -> Request {
        Request {
            query: query.into(),
            k,
            budget: 10_000,
            types: Vec::new(),
            area: None,
            now: Timestamp(1_780_000_000),
            as_of: None,
            origins: None,
            fetched: None,
            fusion: FusionKind::default(),
            floor: 0.0,
            expand: expand::When::Never,
            pin,
        }
    }

    /// Recall `query` over `records`, every one a lexical match of the same score.
    fn recall_all(records: &[(RecordId, Record)], query: &str, k: usize) -> Recall {
        let state = crate::state::fold(records.to_vec());
        let lexical: Vec<(RecordId, f32)> = records.iter().map(|r| (r.0, 5.0)).collect();
        let req = request(query, k, None);
        let mut ranked = rank(&state, &req, Found { lexical, ..Found::default() });
        let mut budget = Budget::new(req.budget);
        let mut layers = Layers::default();
        for kind in LayerKind::ALL {
            layers.put(kind, ranked.fit(kind, &mut budget));
        }
        ranked.into_recall(layers, budget)
    }

    fn constraint(subject: &str, at: i64) -> (RecordId, Record) {
        let (_, mut r) = fact(subject, at);
        if let Payload::Fact(f) = &mut r.payload {
            f.fact_type = FactType::Constraint;
        }
        (r.encode().0, r)
    }

    /// The constraints a recall shows, and how many it cuts, are what scoring every one and
    /// sorting them all gives, whatever the budget: the ones no list found come newest first
    /// (equal dates, and dates after the request's time, by id), merged with the ones found; and
    /// so they stay when the state grows in place.
    #[test]
    fn constraints_are_taken_in_score_order_without_scoring_them_all() {
        let now = request("", 5, None).now;
        let after_now = now.0 - 1_770_000_000;
        let records: Vec<(RecordId, Record)> = (0..300i64)
            .map(|i| {
                let at = match i % 7 {
                    0 => after_now + (i % 3),
                    1 => after_now,
                    2 => 50,
                    _ => (i * 7_919) % 5_000_000,
                };
                let (_, mut r) = constraint(&format!("Constraint {i} of the payments service"), at);
                r.body = "words ".repeat((i as usize * 37) % 90);
                (r.encode().0, r)
            })
            .collect();
        let lexical: Vec<(RecordId, f32)> =
            records.iter().step_by(5).enumerate().map(|(k, r)| (r.0, 10.0 - k as f32 * 0.1)).collect();
        let whole = crate::state::fold(records.clone());
        // Grown in place, after recall has read the order once.
        let grown = crate::state::fold(records[..200].to_vec());
        let _ = grown.constraints_newest_first();
        let grown = grown.with_records(records[200..].to_vec());
        assert_eq!(grown.constraints_newest_first().len(), 300);
        for state in [&whole, &grown] {
            for budget in [300, 2_000, 8_000, 100_000] {
                let req = Request { budget, ..request("payments", 5, None) };
                let mut ranked = rank(state, &req, Found { lexical: lexical.clone(), ..Found::default() });
                let mut b = Budget::new(budget);
                let Layer::Records(items) = ranked.fit(LayerKind::Constraints, &mut b) else {
                    panic!("constraints are records")
                };
                let shown: Vec<RecordId> = items.iter().map(|i| i.id).collect();
                // Every constraint scored, all sorted, fitted one after another.
                let ranks = ranks_of(&lexical, &[]);
                let mut all: Vec<(f64, &crate::state::ConstraintRow, Rank)> = state
                    .constraint_rows()
                    .iter()
                    .map(|c| {
                        let r = ranks.get(&c.id).copied().unwrap_or_default();
                        (constraint_score(c, r, &ranked.fusion, now), c, r)
                    })
                    .collect();
                all.sort_by(constraint_order);
                let mut want_budget = Budget::new(budget);
                let want: Vec<RecordId> = all
                    .iter()
                    .filter(|(_, c, _)| want_budget.admit(LayerKind::Constraints, c.chars + layer::RECORD_MARKUP))
                    .map(|(_, c, _)| c.id)
                    .collect();
                assert!(!want.is_empty() && want.len() < 300 || budget == 100_000, "budget {budget}: {}", want.len());
                assert_eq!(shown, want, "budget {budget}");
                assert_eq!(b.cut, want_budget.cut, "budget {budget}");
            }
        }
    }

    fn supersession(old: RecordId, new: RecordId, at: i64) -> (RecordId, Record) {
        let r = Record {
            kind: Kind::Supersession,
            payload: Payload::Supersession(crate::record::Supersession {
                old,
                old_scope: None,
                new: Some(new),
                reason: "revised".into(),
                method: crate::record::SupersessionMethod::Explicit,
                score: None,
            }),
            author: "T <t@example.com>".into(),
            created_at: Timestamp(1_770_000_000 + at),
            body: String::new(),
        };
        (r.encode().0, r)
    }

    /// A live session's constraints stand as they stood when it started, through writes applied
    /// in place to the state (another writer's, or its own), with what each row is to what the
    /// session had seen worked out once per row and kept between recalls.
    #[test]
    fn a_pinned_sessions_constraints_follow_its_pin_and_the_state() {
        let a = constraint("Deploys need a review", 0);
        let b = constraint("Keys rotate monthly", 1);
        let c = constraint("Logs keep 30 days", 2);
        let shown = |state: &crate::state::State, pin: &pin::Pin| {
            let req = request("deploys", 5, Some(Arc::new(pin.clone())));
            let mut ranked = rank(state, &req, Found::default());
            let mut budget = Budget::new(req.budget);
            let Layer::Records(items) = ranked.fit(LayerKind::Constraints, &mut budget) else { panic!("records") };
            let mut ids: Vec<RecordId> = items.iter().map(|i| i.id).collect();
            ids.sort();
            ids
        };
        let sorted = |mut v: Vec<RecordId>| {
            v.sort();
            v
        };
        let state = crate::state::fold([a.clone(), b.clone()]);
        let mut pin = pin::Pin::new([a.0].into_iter().collect(), Timestamp(0));
        assert_eq!(shown(&state, &pin), vec![a.0], "b came after the session began");
        assert_eq!(shown(&state, &pin), vec![a.0], "asked again: the same");
        pin.add([b.0]);
        assert_eq!(shown(&state, &pin), sorted(vec![a.0, b.0]), "taken in: shown");
        let state = state.with_records(vec![c.clone()]);
        assert_eq!(shown(&state, &pin), sorted(vec![a.0, b.0]), "c is another's");
        // Another writer replaces a, in place: the session keeps a as it started.
        let a2 = constraint("Deploys need two reviews", 3);
        let state = state.with_records(vec![a2.clone(), supersession(a.0, a2.0, 4)]);
        assert_eq!(shown(&state, &pin), sorted(vec![a.0, b.0]), "a stands for the session");
        // The session replaces b itself: it sees its own write at once.
        let b2 = constraint("Keys rotate weekly", 5);
        let by_me = supersession(b.0, b2.0, 6);
        let state = state.with_records(vec![b2.clone(), by_me.clone()]);
        assert_eq!(shown(&state, &pin), sorted(vec![a.0, b.0]), "not yet taken in");
        pin.add([b2.0, by_me.0]);
        assert_eq!(shown(&state, &pin), sorted(vec![a.0, b2.0]), "its own replacement");

        // What a row is to a base is worked out once, across writes applied in place.
        let calls = std::cell::Cell::new(0);
        let in_base = |_: &RecordId| {
            calls.set(calls.get() + 1);
            true
        };
        let state = crate::state::fold([a.clone()]);
        let rows =
            |state: &crate::state::State| state.with_pinned_rows(7, in_base, |rows, known| (rows.len(), known.len()));
        assert_eq!(rows(&state), (1, 1));
        assert_eq!(rows(&state), (1, 1));
        assert_eq!(calls.get(), 1, "kept");
        let state = state.with_records(vec![b.clone()]);
        assert_eq!(rows(&state), (2, 2));
        assert_eq!(calls.get(), 2, "only the new row was asked");
        let state = state.with_records(vec![a2.clone(), supersession(a.0, a2.0, 4)]);
        assert_eq!(rows(&state), (3, 3));
        assert_eq!(calls.get(), 4, "the new row, and what replaced a");
    }

    fn in_area(subject: &str, area: &str, at: i64) -> (RecordId, Record) {
        let (_, mut r) = fact(subject, at);
        if let Payload::Fact(f) = &mut r.payload {
            f.scope = area.to_string();
        }
        (r.encode().0, r)
    }

    #[test]
    fn facts_that_differ_in_anything_they_say_are_each_shown() {
        for (a, b, class) in [
            ("Billing jobs must finish within 30 minutes", "Billing jobs must finish within 5 minutes", "numbers"),
            ("Billing jobs must finish within 30 minutes", "Billing jobs must finish within 30 seconds", "units"),
            ("Billing jobs run on Postgres", "Billing jobs run on MySQL", "names"),
            ("Billing jobs may retry failed charges", "Billing jobs may not retry failed charges", "negation"),
            ("Service 426 uses queue q982 for billing", "Service 427 uses queue q983 for billing", "identifiers"),
        ] {
            let out = recall_all(&[fact(a, 0), fact(b, 1)], "billing", 10);
            assert_eq!(out.items(LayerKind::Facts).len(), 2, "{class}: both are shown");
            assert!(out.items(LayerKind::Facts).iter().all(|f| f.same_words.is_empty()), "{class}: neither is folded");
        }
        let out = recall_all(
            &[
                in_area("Billing jobs must finish within 30 minutes", "billing", 0),
                in_area("Billing jobs must finish within 30 minutes", "billing-eu", 1),
            ],
            "billing",
            10,
        );
        assert_eq!(out.items(LayerKind::Facts).len(), 2, "areas: the same sentence in two areas is two answers");
        let out = recall_all(
            &[
                fact("Billing jobs must finish within 30 minutes.", 0),
                fact("billing jobs  MUST finish within 30 minutes", 1),
            ],
            "billing",
            10,
        );
        assert_eq!(out.items(LayerKind::Facts).len(), 1, "case, spacing and punctuation alone: one answer");
        assert_eq!(out.items(LayerKind::Facts)[0].same_words.len(), 1);
    }

    #[test]
    fn three_limits_in_three_areas_are_shown_and_flagged() {
        let out = recall_all(
            &[
                in_area("Billing jobs must finish within 30 minutes", "billing", 0),
                in_area("Billing jobs must finish within 5 minutes", "billing-eu", 1),
                fact("Billing jobs must finish within 45 minutes", 2),
            ],
            "billing",
            10,
        );
        assert_eq!(out.items(LayerKind::Facts).len(), 3, "every limit is an answer");
        for f in out.items(LayerKind::Facts) {
            assert_eq!(f.conflicts_with.len(), 2, "each names the other two: {:?}", f.needs_review);
            assert!(f.needs_review.iter().any(|r| r.starts_with("conflict:")), "{:?}", f.needs_review);
        }
        assert!(out.items(LayerKind::Facts)[0].subject.contains("45"), "the newest first");
    }
}
