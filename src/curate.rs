//! PURE. Curation planned as records: what `git neo curate` would append to one scope's memory
//! so that it stays sharp as it grows. Every step is a record a reviewer sees in `git neo diff`
//! and undoes with `git neo revert`; nothing is deleted.
//!
//! Steps, in the order they are planned (each sees the ones before):
//! 1. **Demote** facts retrieved at least `demoteAfter` times (local telemetry) without a success
//!    and asked about again (implicit feedback `reasked`): an outcome `retrieved-unused`
//!    ([`DEMOTE`]), one step per `demoteAfter` retrievals but never more steps than re-asks,
//!    keyed by the count reached, so each step is given once. Retrieval alone is not evidence:
//!    demoting every often-retrieved fact without a success (Neo's rule) demoted the facts a
//!    simulated year consulted most, and recall@5 on the recall fixture fell from 0.62 to 0.11.
//! 2. **Prune** stale facts: older than `staleDays` with a confidence below `staleConfidence`, and
//!    that led no answer that stood in the last `staleDays` (a fact in use is not stale): a
//!    supersession without a replacement, method `curation`.
//! 3. **Synthesise** near-duplicates: facts of one type and area whose vectors are at
//!    `synthesize` cosine or more (connected by such pairs) become one new fact tagged
//!    `synthesized` that `derives` from each of them, and each is superseded by it. With no
//!    language model, the new fact is the cluster's most central member (the highest sum of
//!    cosines to the others) with every member's distinct tags and anchors merged and the
//!    highest confidence; the report says so.
//! 4. **Evict** to the scope's cap: while more current facts remain than the cap, the one with
//!    the lowest [`keep_score`] is superseded (method `curation`), oldest first on ties.
//!
//! "Use" is the answers a fact led that stood (`api::feedback::Questions::stood`), not every retrieval: a
//! fact shown beside the answer, or leading an answer that was asked again, was retrieved too,
//! and counting those kept exactly the facts that crowd answers out.
//!
//! Never touched: facts tagged with a protected tag (`seed`, `community`, `synthesized`, and
//! `neo.curate.protect`), and constraints unless asked. A plan made right after its own records
//! were written is empty: demotions are keyed, pruned and evicted facts are no longer current,
//! merged clusters are one protected fact.

use crate::config::CurateSettings;
use crate::rank;
use crate::record::{Anchor, Fact, FactType, Kind, Milli, Payload, RecordId, Relation, RelationType, Timestamp};
use crate::state::{Entry, State, Status};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The confidence delta of a demotion.
pub const DEMOTE: Milli = Milli(-100);
/// The signal of a demotion.
pub const DEMOTE_SIGNAL: &str = "retrieved-unused";
/// The implicit-feedback signal of a question asked again (`api/learn/feedback.rs`).
pub const REASKED_SIGNAL: &str = "reasked";

/// How much a fact is worth keeping: the ranking score of a perfectly relevant match
/// ([`rank::score`] with relevance 1: confidence, successes, a little recency), times
/// `1 + 0.25 × ln(1 + answered)`, where `answered` counts the answers it led that stood: use is
/// the strongest sign of worth. (With a bonus of 0.05 instead, confident facts nobody ever asked
/// for outlived the facts a simulated year consulted every month; counting every retrieval
/// instead kept the facts that crowded the answers to the year's questions.)
pub fn keep_score(confidence: f64, successes: u32, age_days: f64, answered: usize) -> f64 {
    rank::score(1.0, confidence, successes, age_days) * (1.0 + 0.25 * (1.0 + answered as f64).ln())
}

/// What a plan is made from, besides the memory's state.
pub struct Inputs<'a> {
    pub now: Timestamp,
    pub settings: &'a CurateSettings,
    /// The cap of the scope curated.
    pub cap: usize,
    /// Remove constraints too (eviction and pruning; they are never merged).
    pub include_constraints: bool,
    /// Relevant retrievals per fact, from the local telemetry.
    pub retrievals: &'a HashMap<RecordId, usize>,
    /// How often each fact led an answer that stood (`api::feedback::Questions::stood`): evidence of use.
    pub answered: &'a HashMap<RecordId, usize>,
    /// When each fact last led an answer that stood (seconds since the epoch).
    pub last_answered: &'a HashMap<RecordId, i64>,
    /// Pairs of facts at `synthesize` cosine or more (`None`: synthesis could not run).
    pub near: Option<&'a [(RecordId, RecordId, f32)]>,
    /// Keys of outcomes already held (here or waiting in review).
    pub held_keys: &'a BTreeSet<String>,
}

/// A demotion to write.
#[derive(Clone, Debug, Serialize)]
pub struct Demotion {
    pub id: RecordId,
    pub subject: String,
    pub retrievals: usize,
    pub key: String,
}

/// A fact to mark outdated (pruned or evicted).
#[derive(Clone, Debug, Serialize)]
pub struct Removal {
    pub id: RecordId,
    pub subject: String,
    pub reason: String,
    pub score: f64,
}

/// A cluster to merge into one new fact.
#[derive(Clone, Debug, Serialize)]
pub struct Synthesis {
    /// The most central member, whose text the new fact takes.
    pub central: RecordId,
    pub members: Vec<RecordId>,
    pub subject: String,
    /// The new fact (without its relations' ids being written yet: they are the members).
    #[serde(skip)]
    pub fact: Fact,
    #[serde(skip)]
    pub body: String,
    pub min_cosine: f32,
}

/// Everything one curation run would write.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Plan {
    pub demoted: Vec<Demotion>,
    pub pruned: Vec<Removal>,
    pub synthesized: Vec<Synthesis>,
    pub evicted: Vec<Removal>,
    /// Current facts before and after.
    pub before: usize,
    pub after: usize,
    pub cap: usize,
    /// Why synthesis did not run, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthesis_skipped: Option<String>,
    /// Set when the cap cannot be reached without touching protected facts or constraints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub over_cap: Option<String>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.demoted.is_empty() && self.pruned.is_empty() && self.synthesized.is_empty() && self.evicted.is_empty()
    }
}

/// Whether `fact` carries a protected tag.
pub fn protected(fact: &Fact, settings: &CurateSettings) -> bool {
    fact.tags.iter().any(|t| settings.protect.iter().any(|p| p.eq_ignore_ascii_case(t)))
}

fn age_days(now: Timestamp, e: &Entry) -> f64 {
    (now.0 - e.record.created_at.0) as f64 / 86_400.0
}

/// Plan one curation of `state` (see the module docs).
pub fn plan(state: &State, inp: &Inputs<'_>) -> Plan {
    let current: Vec<(&Entry, &Fact)> = state
        .iter()
        .filter(|e| e.status == Status::Valid && e.record.kind == Kind::Fact)
        .filter_map(|e| e.record.as_fact().map(|f| (e, f)))
        .collect();
    let mut p = Planning {
        state,
        inp,
        plan: Plan { before: current.len(), cap: inp.cap, ..Plan::default() },
        confidence: current.iter().map(|(e, _)| (e.id, e.confidence.as_f64())).collect(),
        gone: BTreeSet::new(),
        current,
    };
    p.demote();
    p.prune();
    p.synthesize();
    p.evict();
    p.plan.after = p.current.len() - p.gone.len() + p.plan.synthesized.len();
    p.plan
}

/// A plan being made: the steps in order, each seeing what the ones before decided.
struct Planning<'a> {
    state: &'a State,
    inp: &'a Inputs<'a>,
    /// Every current fact.
    current: Vec<(&'a Entry, &'a Fact)>,
    plan: Plan,
    /// Confidence after this plan's demotions.
    confidence: HashMap<RecordId, f64>,
    /// Facts this plan removes (pruned, merged or evicted).
    gone: BTreeSet<RecordId>,
}

impl Planning<'_> {
    fn conf(&self, id: &RecordId) -> f64 {
        self.confidence.get(id).copied().unwrap_or(0.0).clamp(0.0, 1.0)
    }

    /// Whether curation may take `f` away (not protected; a constraint only when asked).
    fn removable(&self, f: &Fact) -> bool {
        !protected(f, self.inp.settings) && (self.inp.include_constraints || f.fact_type != FactType::Constraint)
    }

    /// Step 1. Demote: one step per `demoteAfter` retrievals, but no more steps than re-asks.
    fn demote(&mut self) {
        let (s, inp, state) = (self.inp.settings, self.inp, self.state);
        for (e, f) in &self.current {
            let n = inp.retrievals.get(&e.id).copied().unwrap_or(0);
            if e.successes > 0 || (n as u64) < s.demote_after || protected(f, s) {
                continue;
            }
            let reasked =
                e.outcomes
                    .iter()
                    .filter(|o| {
                        state.entries.get(o).is_some_and(
                            |x| matches!(&x.record.payload, Payload::Outcome(o) if o.signal == REASKED_SIGNAL),
                        )
                    })
                    .count() as u64;
            let steps = (n as u64 / s.demote_after).min(reasked);
            if steps == 0 {
                continue;
            }
            let step = steps * s.demote_after;
            let key = format!("{}:retrievals-{step}:{DEMOTE_SIGNAL}", e.id.to_hex());
            if inp.held_keys.contains(&key) {
                continue;
            }
            *self.confidence.get_mut(&e.id).expect("current") += DEMOTE.as_f64();
            self.plan.demoted.push(Demotion { id: e.id, subject: f.subject.clone(), retrievals: n, key });
        }
    }

    /// Step 2. Prune what is stale: old, weak, and answering nothing.
    fn prune(&mut self) {
        let (s, inp) = (self.inp.settings, self.inp);
        let mut pruned = Vec::new();
        for (e, f) in &self.current {
            let days = age_days(inp.now, e);
            let c = self.conf(&e.id);
            // Compared in thousandths, as confidences are kept: 0.4 is not below 0.4.
            let below = (c * 1000.0).round() < (f64::from(s.stale_confidence) * 1000.0).round();
            // A fact that answered a question within the window is in use, whatever its confidence.
            let in_use =
                inp.last_answered.get(&e.id).is_some_and(|t| (inp.now.0 - t) as f64 <= s.stale_days as f64 * 86_400.0);
            if self.removable(f) && days > s.stale_days as f64 && below && !in_use {
                pruned.push(Removal {
                    id: e.id,
                    subject: f.subject.clone(),
                    reason: format!(
                        "curate: stale, {} days old with confidence {c:.2} below {:.2}",
                        days.floor(),
                        s.stale_confidence
                    ),
                    score: c,
                });
            }
        }
        self.gone.extend(pruned.iter().map(|r| r.id));
        self.plan.pruned = pruned;
    }

    /// Step 3. Synthesise: each cluster of rewordings of one statement becomes one fact.
    fn synthesize(&mut self) {
        let Some(near) = self.inp.near else {
            self.plan.synthesis_skipped = Some("no vectors: the recall index has no embeddings".into());
            return;
        };
        let (clusters, pairs) = self.clusters(near);
        let facts: HashMap<RecordId, (&Entry, &Fact)> = self.current.iter().map(|(e, f)| (e.id, (*e, *f))).collect();
        for members in clusters {
            let cos =
                |a: RecordId, b: RecordId| pairs.get(&if a < b { (a, b) } else { (b, a) }).copied().unwrap_or(0.0);
            let central = *members
                .iter()
                .max_by(|a, b| {
                    let sa: f32 = members.iter().map(|m| cos(**a, *m)).sum();
                    let sb: f32 = members.iter().map(|m| cos(**b, *m)).sum();
                    sa.total_cmp(&sb).then(b.cmp(a))
                })
                .expect("two members or more");
            let min_cosine = members
                .iter()
                .flat_map(|a| members.iter().map(move |b| (*a, *b)))
                .filter(|(a, b)| a < b)
                .map(|(a, b)| cos(a, b))
                .filter(|c| *c > 0.0)
                .fold(1.0f32, f32::min);
            let (ce, cf) = facts[&central];
            let fact = self.merged(cf, central, &members, &facts);
            for m in &members {
                self.gone.insert(*m);
            }
            self.plan.synthesized.push(Synthesis {
                central,
                members,
                subject: cf.subject.clone(),
                fact,
                body: ce.record.body.clone(),
                min_cosine,
            });
        }
    }

    /// The clusters of mergeable facts (connected by qualifying pairs, by union-find), each of
    /// two or more, and the cosine of each qualifying pair.
    #[allow(clippy::type_complexity)]
    fn clusters(&self, near: &[(RecordId, RecordId, f32)]) -> (Vec<Vec<RecordId>>, HashMap<(RecordId, RecordId), f32>) {
        let s = self.inp.settings;
        let facts: HashMap<RecordId, &Fact> = self.current.iter().map(|(e, f)| (e.id, *f)).collect();
        let mergeable = |id: &RecordId| {
            facts.get(id).filter(|f| !self.gone.contains(id) && !protected(f, s) && f.fact_type != FactType::Constraint)
        };
        let mut parent: BTreeMap<RecordId, RecordId> = BTreeMap::new();
        fn find(p: &mut BTreeMap<RecordId, RecordId>, x: RecordId) -> RecordId {
            let mut r = x;
            while let Some(&q) = p.get(&r).filter(|q| **q != r) {
                r = q;
            }
            p.insert(x, r);
            r
        }
        let mut pairs: HashMap<(RecordId, RecordId), f32> = HashMap::new();
        for &(a, b, cos) in near {
            if a == b || cos < s.synthesize {
                continue;
            }
            let (Some(fa), Some(fb)) = (mergeable(&a), mergeable(&b)) else { continue };
            if fa.fact_type != fb.fact_type || fa.scope != fb.scope {
                continue;
            }
            // Merging hides the members behind one fact: only rewordings of one statement
            // merge, by the rule similarity supersession follows (a high cosine alone is a
            // neighbour as often: "the divisor is known" / "… unknown").
            let (ra, rb) = (crate::frame::frame(&fa.subject), crate::frame::frame(&fb.subject));
            if !crate::frame::rewording(&ra, &rb) {
                continue;
            }
            let key = if a < b { (a, b) } else { (b, a) };
            pairs.insert(key, cos);
            parent.entry(a).or_insert(a);
            parent.entry(b).or_insert(b);
            let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
            if ra != rb {
                parent.insert(ra.max(rb), ra.min(rb));
            }
        }
        let ids: Vec<RecordId> = parent.keys().copied().collect();
        let mut clusters: BTreeMap<RecordId, Vec<RecordId>> = BTreeMap::new();
        for id in ids {
            let root = find(&mut parent, id);
            clusters.entry(root).or_default().push(id);
        }
        (clusters.into_values().filter(|m| m.len() > 1).collect(), pairs)
    }

    /// The fact a cluster becomes: its central member with every member's distinct tags and
    /// anchors, the highest confidence, `derives` relations to each, tagged `synthesized`.
    fn merged(
        &self,
        central_fact: &Fact,
        central: RecordId,
        members: &[RecordId],
        facts: &HashMap<RecordId, (&Entry, &Fact)>,
    ) -> Fact {
        let mut fact = central_fact.clone();
        let mut tags: Vec<String> = Vec::new();
        let mut anchors: Vec<Anchor> = Vec::new();
        let mut best = 0.0f64;
        for m in std::iter::once(&central).chain(members.iter().filter(|m| **m != central)) {
            let (_, f) = facts[m];
            for t in &f.tags {
                if !tags.iter().any(|x| x.eq_ignore_ascii_case(t)) {
                    tags.push(t.clone());
                }
            }
            for a in &f.anchors {
                if !anchors.iter().any(|x| x.path == a.path && x.lines == a.lines) {
                    anchors.push(a.clone());
                }
            }
            best = best.max(self.conf(m));
        }
        if !tags.iter().any(|t| t == "synthesized") {
            tags.push("synthesized".into());
        }
        // Canonical form: sorted, no duplicates.
        tags.sort();
        tags.dedup();
        fact.tags = tags;
        fact.anchors = anchors;
        fact.confidence = Milli((best * 1000.0).round() as i32).clamp_unit();
        fact.relations = members.iter().map(|m| Relation { rel: RelationType::Derives, id: *m }).collect();
        // Links to records of the cluster itself would point at superseded members.
        fact.depends_on.retain(|d| !members.contains(d));
        fact
    }

    /// Step 4. Evict to the cap: the lowest keep scores among what may be removed.
    fn evict(&mut self) {
        let inp = self.inp;
        let remaining = self.current.len() - self.gone.len() + self.plan.synthesized.len();
        if remaining <= inp.cap {
            return;
        }
        let mut candidates: Vec<(f64, Timestamp, RecordId, &Fact)> = self
            .current
            .iter()
            .filter(|(e, f)| !self.gone.contains(&e.id) && self.removable(f))
            .map(|(e, f)| {
                let n = inp.answered.get(&e.id).copied().unwrap_or(0);
                (keep_score(self.conf(&e.id), e.successes, age_days(inp.now, e), n), e.record.created_at, e.id, *f)
            })
            .collect();
        candidates.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let need = remaining - inp.cap;
        if candidates.len() < need {
            self.plan.over_cap = Some(format!(
                "{} current facts are protected or constraints: the cap of {} cannot be reached without them",
                remaining - candidates.len(),
                inp.cap
            ));
        }
        let evicted: Vec<Removal> = candidates
            .into_iter()
            .take(need)
            .map(|(score, _, id, f)| Removal {
                id,
                subject: f.subject.clone(),
                reason: format!(
                    "curate: over the cap of {} current facts; keep score {score:.3}, among the lowest",
                    inp.cap
                ),
                score,
            })
            .collect();
        self.gone.extend(evicted.iter().map(|r| r.id));
        self.plan.evicted = evicted;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;

    fn fact(n: u32, t: FactType, tags: &[&str], conf: i32, day: i64) -> (RecordId, Record) {
        fact_about(&format!("fact number {n}"), t, tags, conf, day)
    }

    fn fact_about(subject: &str, t: FactType, tags: &[&str], conf: i32, day: i64) -> (RecordId, Record) {
        let f = Fact {
            tags: tags.iter().map(|s| s.to_string()).collect(),
            confidence: Milli(conf),
            ..Fact::new(t, subject.to_string())
        };
        let r = Record {
            kind: Kind::Fact,
            payload: Payload::Fact(f),
            author: "T <t@e>".into(),
            created_at: Timestamp(day * 86_400),
            body: String::new(),
        };
        (r.encode().0, r)
    }

    static NONE: std::sync::LazyLock<HashMap<RecordId, i64>> = std::sync::LazyLock::new(HashMap::new);
    static NO_ANSWERS: std::sync::LazyLock<HashMap<RecordId, usize>> = std::sync::LazyLock::new(HashMap::new);

    fn inputs<'a>(
        s: &'a CurateSettings,
        cap: usize,
        r: &'a HashMap<RecordId, usize>,
        near: Option<&'a [(RecordId, RecordId, f32)]>,
        keys: &'a BTreeSet<String>,
    ) -> Inputs<'a> {
        Inputs {
            now: Timestamp(100 * 86_400),
            settings: s,
            cap,
            include_constraints: false,
            retrievals: r,
            answered: &NO_ANSWERS,
            last_answered: &NONE,
            near,
            held_keys: keys,
        }
    }

    #[test]
    fn caps_evict_the_weakest_and_spare_protected_and_constraints() {
        let s = CurateSettings::defaults();
        let mut records =
            vec![fact(0, FactType::Constraint, &[], 100, 99), fact(1, FactType::Pattern, &["seed"], 100, 99)];
        for n in 2..10 {
            records.push(fact(n, FactType::Pattern, &[], 500 + n as i32 * 10, 99));
        }
        let ids: Vec<RecordId> = records.iter().map(|r| r.0).collect();
        let state = crate::state::fold(records);
        let (r, k) = (HashMap::new(), BTreeSet::new());
        let p = plan(&state, &inputs(&s, 5, &r, Some(&[]), &k));
        assert_eq!(p.evicted.len(), 5);
        let evicted: Vec<RecordId> = p.evicted.iter().map(|e| e.id).collect();
        assert_eq!(evicted, ids[2..7].to_vec(), "the lowest confidence first");
        assert_eq!(p.after, 5);
        // A cap below the protected facts cannot be reached, and says so.
        let p = plan(&state, &inputs(&s, 1, &r, Some(&[]), &k));
        assert!(p.over_cap.is_some());
        assert_eq!(p.after, 2);
    }

    #[test]
    fn stale_low_confidence_facts_are_pruned_and_retrieval_without_success_demotes_once() {
        let s = CurateSettings::defaults();
        let old_weak = fact(1, FactType::Pattern, &[], 350, 10);
        let old_strong = fact(2, FactType::Pattern, &[], 800, 10);
        let young_weak = fact(3, FactType::Pattern, &[], 350, 95);
        let used = fact(4, FactType::Pattern, &[], 420, 10);
        let r: HashMap<RecordId, usize> = [(used.0, 12)].into();
        let k = BTreeSet::new();
        // Retrieved often, but never asked about again: no demotion.
        let quiet = crate::state::fold(vec![used.clone()]);
        assert!(plan(&quiet, &inputs(&s, 500, &r, None, &k)).demoted.is_empty());
        let reask = Record {
            kind: Kind::Outcome,
            payload: Payload::Outcome(crate::record::Outcome {
                target: used.0,
                signal: REASKED_SIGNAL.into(),
                delta: Milli(-20),
                commits: vec![],
                paths: vec![],
                key: "k".into(),
            }),
            author: "T <t@e>".into(),
            created_at: Timestamp(50 * 86_400),
            body: String::new(),
        };
        let state =
            crate::state::fold(vec![old_weak.clone(), old_strong, young_weak, used.clone(), (reask.encode().0, reask)]);
        let p = plan(&state, &inputs(&s, 500, &r, None, &k));
        assert_eq!(p.demoted.len(), 1);
        assert_eq!(p.demoted[0].key, format!("{}:retrievals-10:retrieved-unused", used.0.to_hex()));
        // Re-asked to 0.40, then demoted to 0.30: the used fact is now stale too.
        let pruned: BTreeSet<RecordId> = p.pruned.iter().map(|x| x.id).collect();
        assert_eq!(pruned, [old_weak.0, used.0].into());
        assert!(p.synthesis_skipped.is_some());
        // Held keys are not demoted again.
        let k: BTreeSet<String> = [p.demoted[0].key.clone()].into();
        assert!(plan(&state, &inputs(&s, 500, &r, None, &k)).demoted.is_empty());
    }

    #[test]
    fn near_duplicates_of_one_type_merge_into_the_central_one() {
        let s = CurateSettings::defaults();
        let a = fact_about("Retry the flaky upload test once", FactType::Pattern, &["x"], 600, 99);
        let b = fact_about("Retry the flaky upload test once.", FactType::Pattern, &["y"], 700, 99);
        let c = fact_about("Retry the flaky upload test once!", FactType::Pattern, &[], 500, 99);
        let other = fact_about("Retry the flaky upload test once", FactType::Decision, &[], 500, 99);
        let state = crate::state::fold(vec![a.clone(), b.clone(), c.clone(), other.clone()]);
        let near = [(a.0, b.0, 0.95), (b.0, c.0, 0.96), (a.0, c.0, 0.93), (c.0, other.0, 0.99)];
        let (r, k) = (HashMap::new(), BTreeSet::new());
        let p = plan(&state, &inputs(&s, 500, &r, Some(&near), &k));
        assert_eq!(p.synthesized.len(), 1);
        let syn = &p.synthesized[0];
        assert_eq!(syn.members.len(), 3, "the decision is another type");
        assert_eq!(syn.central, b.0, "highest sum of cosines: 0.95 + 0.96");
        let tags: BTreeSet<&str> = syn.fact.tags.iter().map(String::as_str).collect();
        assert_eq!(tags, ["x", "y", "synthesized"].into());
        assert_eq!(syn.fact.confidence, Milli(700));
        assert_eq!(p.after, 2);
        // Neighbours at a high cosine are not rewordings, and are never merged.
        let d = fact_about("fact number 1", FactType::Pattern, &[], 600, 99);
        let e = fact_about("fact number 2", FactType::Pattern, &[], 600, 99);
        let state = crate::state::fold(vec![d.clone(), e.clone()]);
        let near = [(d.0, e.0, 0.97)];
        assert!(plan(&state, &inputs(&s, 500, &r, Some(&near), &k)).synthesized.is_empty());
    }
}

/// A lesson the memory shows a procedure needs: what it says, the records it rests on, and why
/// it was proposed (said in the reason, which also keys it: a lesson proposed once, taken or
/// turned down, is not proposed again).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LessonCandidate {
    pub text: String,
    pub because: Vec<RecordId>,
    pub reason: String,
}

/// How many failures must share a phrase before it is a lesson.
pub const RECURRING_FAILURES: usize = 3;

/// Words too common to carry a phrase at either end.
const GLUE: [&str; 24] = [
    "a", "an", "the", "to", "of", "in", "on", "for", "and", "or", "is", "was", "with", "when", "it", "this", "that",
    "be", "by", "at", "from", "as", "after", "again",
];

/// The words of `text`, lowercased, each with the byte range it spans (leading dashes included,
/// so a phrase shown from the text keeps `--locked`).
fn words_of(text: &str) -> Vec<(String, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        let inner = c.is_alphanumeric() || c == '_' || c == '-' || c == '.';
        match (inner, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                start = None;
                let raw = &text[s..i];
                let word = raw.trim_matches(|c: char| c == '-' || c == '.').to_lowercase();
                if !word.is_empty() {
                    let end = s + raw.trim_end_matches(['-', '.']).len();
                    out.push((word, s..end));
                }
            }
            _ => {}
        }
    }
    out
}

/// Lessons from what keeps going wrong, deterministically and without a model:
/// - **Recurring failures:** valid `failure` facts whose subjects share a phrase of two to five
///   words (not starting or ending with a glue word), at least [`RECURRING_FAILURES`] of them:
///   the longest phrase shared by the most failures first; each failure joins one lesson.
/// - **A check that failed, then passed:** attempts at one task where a check failed and a later
///   attempt's check passed: the passing attempt's action is the step that fixed it.
///
/// Candidates whose reason an existing lesson already gives (`given`) are left out.
pub fn lessons(state: &State, given: &BTreeSet<String>) -> Vec<LessonCandidate> {
    let mut out = Vec::new();
    let failures: Vec<&Entry> = state
        .iter()
        .filter(|e| e.status == Status::Valid)
        .filter(|e| e.record.as_fact().is_some_and(|f| f.fact_type == FactType::Failure))
        .collect();
    let spans: Vec<Vec<(String, std::ops::Range<usize>)>> =
        failures.iter().map(|e| words_of(&e.record.summary())).collect();
    let words: Vec<Vec<String>> = spans.iter().map(|w| w.iter().map(|(w, _)| w.clone()).collect()).collect();
    let mut used = vec![false; failures.len()];
    loop {
        // Phrase -> the failures (not yet in a lesson) whose subject holds it.
        let mut holders: BTreeMap<Vec<String>, BTreeSet<usize>> = BTreeMap::new();
        for (i, w) in words.iter().enumerate().filter(|(i, _)| !used[*i]) {
            for n in 2..=5.min(w.len()) {
                for gram in w.windows(n) {
                    if GLUE.contains(&gram[0].as_str()) || GLUE.contains(&gram[n - 1].as_str()) {
                        continue;
                    }
                    holders.entry(gram.to_vec()).or_default().insert(i);
                }
            }
        }
        let best = holders
            .into_iter()
            .filter(|(_, h)| h.len() >= RECURRING_FAILURES)
            .max_by(|a, b| (a.0.len(), a.1.len()).cmp(&(b.0.len(), b.1.len())).then(b.0.cmp(&a.0)));
        let Some((phrase, members)) = best else { break };
        let key = format!("share {}", phrase.join(" "));
        // Shown as the latest failure writes it.
        let latest_at = members.iter().copied().max_by_key(|&i| (failures[i].record.created_at, failures[i].id));
        let shown = latest_at.and_then(|i| {
            let at = words[i].windows(phrase.len()).position(|g| g == phrase.as_slice())?;
            let text = failures[i].record.summary();
            Some(text[spans[i][at].1.start..spans[i][at + phrase.len() - 1].1.end].to_string())
        });
        let phrase = shown.unwrap_or_else(|| phrase.join(" "));
        let mut group: Vec<&Entry> = members.iter().map(|&i| failures[i]).collect();
        group.sort_by_key(|e| (e.record.created_at, e.id));
        members.iter().for_each(|&i| used[i] = true);
        let ids: Vec<String> = group.iter().map(|e| e.id.short()).collect();
        let reason = format!("proposed because failures {} share '{phrase}'", ids.join(", "));
        // Given already when a lesson's reason names the same phrase (however it was written).
        let norm = |g: &str| words_of(g).into_iter().map(|(w, _)| w).collect::<Vec<_>>().join(" ");
        if given.iter().any(|g| norm(g).contains(&key)) {
            continue;
        }
        let latest = group.last().map(|e| e.record.summary()).unwrap_or_default();
        out.push(LessonCandidate {
            text: format!(
                "'{phrase}' has failed {} times (latest: \"{latest}\"): check for it before calling the work done.",
                group.len()
            ),
            because: group.iter().map(|e| e.id).collect(),
            reason,
        });
    }
    // A check that failed, then passed after a named step.
    let mut by_task: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    for e in state.iter().filter(|e| e.status == Status::Valid) {
        if let Payload::Attempt(a) = &e.record.payload {
            by_task.entry(a.task.as_str()).or_default().push(e);
        }
    }
    for (task, mut tries) in by_task {
        tries.sort_by_key(|e| (e.record.created_at, e.id));
        let attempt = |e: &Entry| match &e.record.payload {
            Payload::Attempt(a) => Some(a.clone()),
            _ => None,
        };
        let Some(failed) = tries.iter().position(|e| {
            attempt(e)
                .is_some_and(|a| a.check.result == crate::record::CheckResult::Failed && a.check.command.is_some())
        }) else {
            continue;
        };
        let command = attempt(tries[failed]).and_then(|a| a.check.command).unwrap_or_default();
        let Some(passed) = tries[failed + 1..].iter().find(|e| {
            attempt(e).is_some_and(|a| {
                a.check.result == crate::record::CheckResult::Passed
                    && a.check.command.as_deref() == Some(command.as_str())
            })
        }) else {
            continue;
        };
        let Some(fix) = attempt(passed) else { continue };
        let reason = format!(
            "proposed because `{command}` failed in attempt {} and passed in attempt {} after: {}",
            tries[failed].id.short(),
            passed.id.short(),
            fix.action
        );
        if given.iter().any(|g| {
            g.contains(&format!("attempt {} and passed in attempt {}", tries[failed].id.short(), passed.id.short()))
        }) {
            continue;
        }
        out.push(LessonCandidate {
            text: format!("For {task}: {} (`{command}` failed without it and passed with it).", fix.action),
            because: vec![tries[failed].id, passed.id],
            reason,
        });
    }
    out
}
