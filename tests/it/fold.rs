//! The fold: same records in, same state out, whatever the order; each rule checked on its own.

use git_neo::record::{
    Fact, FactType, Kind, Milli, Outcome, Payload, Record, RecordId, Retraction, Supersession, SupersessionMethod,
    Timestamp,
};
use git_neo::state::{fold, State, Status};

fn at(secs: i64, kind: Kind, payload: Payload, body: &str) -> (RecordId, Record) {
    let r = Record {
        kind,
        payload,
        author: "A <a@example.com>".into(),
        created_at: Timestamp(1_770_000_000 + secs),
        body: body.into(),
    };
    (r.encode().0, r)
}

fn fact(secs: i64, subject: &str, confidence: i32) -> (RecordId, Record) {
    at(
        secs,
        Kind::Fact,
        Payload::Fact(Fact { confidence: Milli(confidence), ..Fact::new(FactType::Pattern, subject) }),
        "",
    )
}

fn retract(secs: i64, target: RecordId) -> (RecordId, Record) {
    at(secs, Kind::Retraction, Payload::Retraction(Retraction { target, reason: "wrong".into() }), "")
}

fn outcome(secs: i64, target: RecordId, signal: &str, delta: i32, key: &str) -> (RecordId, Record) {
    at(
        secs,
        Kind::Outcome,
        Payload::Outcome(Outcome {
            target,
            signal: signal.into(),
            delta: Milli(delta),
            commits: vec![],
            paths: vec![],
            key: key.into(),
        }),
        "",
    )
}

/// A deterministic permutation (LCG-driven Fisher-Yates), so failures reproduce.
fn shuffled<T: Clone>(items: &[T], seed: u64) -> Vec<T> {
    let mut v = items.to_vec();
    let mut s = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    for i in (1..v.len()).rev() {
        s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        v.swap(i, (s >> 33) as usize % (i + 1));
    }
    v
}

fn summary(state: &State) -> Vec<(RecordId, Status, i32, u32, Option<RecordId>)> {
    state.iter().map(|e| (e.id, e.status, e.confidence.0, e.successes, e.retracted_by)).collect()
}

fn scenario() -> Vec<(RecordId, Record)> {
    let a = fact(0, "use the builder", 700);
    let b = fact(1, "prefer small modules", 600);
    let c = fact(2, "pin the toolchain", 900);
    let d = fact(3, "cache in target/", 500);
    let r1 = retract(10, b.0);
    let r2 = retract(11, d.0);
    let r3 = retract(12, r2.0); // revives d
    let sup = at(
        13,
        Kind::Supersession,
        Payload::Supersession(Supersession {
            old: c.0,
            old_scope: None,
            new: Some(a.0),
            reason: "merged".into(),
            method: SupersessionMethod::Explicit,
            score: None,
        }),
        "",
    );
    let o1 = outcome(20, a.0, "accepted", 200, "a:c1:accepted");
    let o2 = outcome(21, a.0, "accepted", 200, "a:c1:accepted"); // same evidence: ignored
    let o3 = outcome(22, a.0, "accepted", 200, "a:c2:accepted"); // clamps at 1.0
    let o4 = outcome(23, d.0, "regression", -900, "d:c3:regression"); // clamps at 0.0
    vec![a, b, c, d, r1, r2, r3, sup, o1, o2, o3, o4]
}

#[test]
fn shuffled_input_folds_to_the_same_state() {
    let records = scenario();
    let reference = summary(&fold(records.clone()));
    for seed in 0..50 {
        assert_eq!(summary(&fold(shuffled(&records, seed))), reference, "seed {seed}");
    }
    // Duplicated input (the same record read from two tips) changes nothing either.
    let mut doubled = records.clone();
    doubled.extend(records.iter().cloned());
    assert_eq!(summary(&fold(shuffled(&doubled, 7))), reference);
}

#[test]
fn each_rule_holds() {
    let records = scenario();
    let ids: Vec<RecordId> = records.iter().map(|(id, _)| *id).collect();
    let state = fold(records);
    let e = |i: usize| &state.entries[&ids[i]];
    assert_eq!(e(0).status, Status::Valid);
    assert_eq!(e(0).confidence, Milli(1000), "0.7 + 0.2 + 0.2 clamps to 1.0; the repeated key counts once");
    assert_eq!(e(0).successes, 2);
    assert_eq!(e(0).outcomes.len(), 2);
    assert_eq!(e(1).status, Status::Retracted);
    assert_eq!(e(1).retracted_by, Some(ids[4]));
    assert_eq!(e(2).status, Status::Superseded);
    assert_eq!(e(2).superseded_by, vec![ids[0]]);
    assert_eq!(e(3).status, Status::Valid, "retracting the retraction revives the fact");
    assert_eq!(e(3).confidence, Milli(0), "0.5 - 0.9 clamps to 0.0");
    assert_eq!(e(5).status, Status::Retracted, "the retraction itself was retracted");
    // Fold order is (created_at, id).
    assert_eq!(state.order, ids);
}

#[test]
fn duplicates_are_found_by_normalised_content_among_valid_facts() {
    let a = fact(0, "Use  the BUILDER", 700);
    let state = fold(vec![a.clone()]);
    let probe = fact(5, "use the builder", 100);
    let probe_fact = probe.1.as_fact().expect("fact");
    assert_eq!(state.duplicate_of(probe_fact, ""), Some(a.0));
    assert_eq!(state.duplicate_of(probe_fact, "different body"), None);
    let forgotten = fold(vec![a.clone(), retract(1, a.0)]);
    assert_eq!(forgotten.duplicate_of(probe_fact, ""), None, "a forgotten fact can be added again");
}

#[test]
fn adding_records_to_a_state_equals_folding_everything() {
    let records = scenario();
    // Appended in order (the fast path), and out of order or with effects (a full fold).
    for split in 0..records.len() {
        let (old, new) = records.split_at(split);
        let incremental = fold(old.to_vec()).with_records(new.to_vec());
        assert_eq!(summary(&incremental), summary(&fold(records.clone())), "split at {split}");
    }
    let late = fact(100, "a later fact", 700);
    let early = fact(-100, "an earlier fact", 700);
    let base = fold(records.clone());
    let mut all = records.clone();
    all.push(late.clone());
    all.push(early.clone());
    assert_eq!(summary(&base.with_records(vec![late.clone(), early.clone()])), summary(&fold(all)));
    // The de-duplication index stays right after an appended fact.
    let state = fold(records.clone());
    let probe = fact(200, "brand new", 700);
    assert_eq!(state.duplicate_of(probe.1.as_fact().expect("fact"), ""), None);
    let state = state.with_records(vec![probe.clone()]);
    assert_eq!(state.duplicate_of(probe.1.as_fact().expect("fact"), ""), Some(probe.0));
}

fn supersede(secs: i64, old: RecordId, new: Option<RecordId>) -> (RecordId, Record) {
    at(
        secs,
        Kind::Supersession,
        Payload::Supersession(Supersession {
            old,
            old_scope: None,
            new,
            reason: "replaced".into(),
            method: if new.is_some() { SupersessionMethod::Key } else { SupersessionMethod::Outdated },
            score: None,
        }),
        "",
    )
}

fn constrained((_, mut r): (RecordId, Record)) -> (RecordId, Record) {
    if let Payload::Fact(f) = &mut r.payload {
        f.fact_type = FactType::Constraint;
    }
    (r.encode().0, r)
}

fn depending(secs: i64, subject: &str, depends_on: Vec<RecordId>, derives: Vec<RecordId>) -> (RecordId, Record) {
    let (_, mut r) = fact(secs, subject, 700);
    if let Payload::Fact(f) = &mut r.payload {
        f.depends_on = depends_on;
        f.relations = derives
            .into_iter()
            .map(|id| git_neo::record::Relation { rel: git_neo::record::RelationType::Derives, id })
            .collect();
    }
    (r.encode().0, r)
}

/// Two clones replaced the same fact independently; their memories merged. Whatever the order the
/// records are read in: the old fact is superseded, both replacements stay valid, and both are
/// flagged as a conflict naming each other. Dependents of the replaced fact need review.
#[test]
fn concurrent_supersessions_are_a_deterministic_conflict_and_dependents_need_review() {
    use git_neo::state::ReviewFlag;
    let old = fact(0, "deploy to heroku", 700);
    let dep = depending(1, "the heroku buildpack needs a Procfile", vec![old.0], vec![]);
    let inferred = depending(2, "so deploys take five minutes", vec![], vec![old.0]);
    let ours = fact(10, "deploy to fly.io", 750);
    let theirs = fact(11, "deploy to render", 750);
    let s1 = supersede(10, old.0, Some(ours.0));
    let s2 = supersede(11, old.0, Some(theirs.0));
    let records = vec![old.clone(), dep.clone(), inferred.clone(), ours.clone(), theirs.clone(), s1, s2.clone()];
    let flags = |state: &State| -> Vec<(RecordId, Vec<ReviewFlag>)> {
        state.iter().map(|e| (e.id, e.needs_review.clone())).collect()
    };
    let reference = fold(records.clone());
    for seed in 0..30 {
        let s = fold(shuffled(&records, seed));
        assert_eq!(summary(&s), summary(&reference), "seed {seed}");
        assert_eq!(flags(&s), flags(&reference), "seed {seed}");
    }
    let e = |id: RecordId| &reference.entries[&id];
    assert_eq!(e(old.0).status, Status::Superseded);
    assert_eq!((e(ours.0).status, e(theirs.0).status), (Status::Valid, Status::Valid));
    assert_eq!(e(ours.0).needs_review, vec![ReviewFlag::Conflict { old: old.0, others: vec![theirs.0] }]);
    assert_eq!(e(theirs.0).needs_review, vec![ReviewFlag::Conflict { old: old.0, others: vec![ours.0] }]);
    assert_eq!(e(dep.0).needs_review, vec![ReviewFlag::DependsOn { id: old.0, status: Status::Superseded }]);
    assert_eq!(e(inferred.0).needs_review, vec![ReviewFlag::DerivesFrom { id: old.0, status: Status::Superseded }]);

    // Resolving the conflict: one replacement is itself replaced; the other is no longer flagged.
    let resolved = fold(records.iter().cloned().chain([supersede(20, theirs.0, Some(ours.0))]));
    assert!(resolved.entries[&ours.0].needs_review.is_empty());
    // Reverting one supersession (retracting it) leaves a single replacement: no conflict either.
    let reverted = fold(records.iter().cloned().chain([retract(20, s2.0)]));
    assert!(reverted.entries[&ours.0].needs_review.is_empty());
    assert!(reverted.entries[&theirs.0].needs_review.is_empty());
    // Appending a dependent of a superseded fact to a folded state flags it just as a full fold does.
    let late = depending(30, "late dependent", vec![old.0], vec![]);
    let appended = reference.clone().with_records(vec![late.clone()]);
    assert_eq!(
        appended.entries[&late.0].needs_review,
        fold(records.iter().cloned().chain([late.clone()])).entries[&late.0].needs_review
    );
    assert!(!appended.entries[&late.0].needs_review.is_empty());
}

/// Everything the fold derives, entry by entry in fold order.
fn everything(state: &State) -> serde_json::Value {
    serde_json::to_value(state.iter().collect::<Vec<_>>()).expect("entries serialise")
}

/// Random histories of the writes memory sees (facts that depend on or derive from earlier ones,
/// supersessions with and without a replacement, second replacements, retractions, outcomes;
/// some in the same second, some dated earlier), applied to a folded state in batches: the result
/// equals folding everything, field by field, whichever path `with_records` takes.
#[test]
fn adding_records_in_place_equals_folding_everything_on_random_histories() {
    let mut s: u64 = 0x5eed;
    let mut next = |n: usize| {
        s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (s >> 33) as usize % n.max(1)
    };
    for history in 0..40 {
        let mut records: Vec<(RecordId, Record)> = Vec::new();
        let mut facts: Vec<RecordId> = Vec::new();
        for step in 0..30 {
            let secs = step as i64 - [0, 0, 0, 1, 3][next(5)];
            let pick = next(10);
            if facts.is_empty() || pick < 4 {
                let f = if facts.is_empty() || next(3) > 0 {
                    depending(secs, &format!("fact {history}.{step}"), vec![], vec![])
                } else {
                    let a = facts[next(facts.len())];
                    let b = facts[next(facts.len())];
                    depending(secs, &format!("fact {history}.{step}"), vec![a], vec![b])
                };
                // Some of them constraints (recall keeps a row for each, grown in place).
                let f = if next(2) == 0 { constrained(f) } else { f };
                // Sometimes a replacement, written just before its supersession.
                let replaces = (!facts.is_empty() && next(4) == 0).then(|| facts[next(facts.len())]);
                facts.push(f.0);
                let new = f.0;
                records.push(f);
                if let Some(old) = replaces {
                    records.push(supersede(secs, old, Some(new)));
                }
            } else if pick < 7 {
                let old = facts[next(facts.len())];
                let new = if next(3) == 0 { None } else { Some(facts[next(facts.len())]) };
                records.push(supersede(secs, old, new));
            } else if pick < 8 {
                let target = records[next(records.len())].0;
                records.push(retract(secs, target));
            } else {
                let target = facts[next(facts.len())];
                records.push(outcome(secs, target, "accepted", 100, &format!("k{}", next(3))));
            }
        }
        records.dedup_by_key(|(id, _)| *id);
        let reference = fold(records.clone());
        // Batches of one to three records, applied one after another.
        let mut state = fold(Vec::new());
        let mut i = 0;
        while i < records.len() {
            let n = (1 + next(3)).min(records.len() - i);
            // The constraint rows are built before the write, so the write keeps them.
            let _ = state.constraint_rows();
            state = state.with_records(records[i..i + n].to_vec());
            i += n;
            let folded = fold(records[..i].to_vec());
            assert_eq!(everything(&state), everything(&folded), "history {history}, {i} records");
            // In any order: recall sorts them by score, then id.
            let rows = |s: &git_neo::state::State| {
                let mut r = s.constraint_rows().to_vec();
                r.sort_by_key(|r| r.id);
                r
            };
            assert_eq!(rows(&state), rows(&folded), "history {history}, {i} records");
        }
        assert_eq!(everything(&state), everything(&reference), "history {history}");
        assert_eq!(state.order, reference.order, "history {history}");
    }
}

/// The frame rule's candidates are the same whether the state scans for them (its first write)
/// or reads its index (every write after, in a warm session), and the index follows the state
/// through writes applied in place and through a full re-fold.
#[test]
fn the_same_thing_index_answers_as_the_scan_does_across_writes() {
    let subjects = [
        "The deadline is January 10",
        "The release deadline is March 3",
        "The deadline moved to January 20",
        "Retries use a fixed 1s delay",
        "The deadline is not set",
    ];
    let records: Vec<(RecordId, Record)> = subjects.iter().enumerate().map(|(i, s)| fact(i as i64, s, 700)).collect();
    let probe = Fact::new(FactType::Pattern, "The deadline is February 1");
    let scanned = fold(records.clone());
    let by_scan = scanned.same_thing(&probe);
    assert!(!by_scan.is_empty(), "the probe has candidates");
    let by_index = scanned.same_thing(&probe);
    assert_eq!(by_index, by_scan, "the second call reads the index");
    // A new fact about the deadline, written in place: the index grows.
    let late = fact(10, "The deadline is January 31", 700);
    let state = scanned.with_records(vec![late.clone()]);
    let mut expected = by_scan.clone();
    expected.push(late.0);
    assert_eq!(state.same_thing(&probe), expected);
    // A retraction re-folds everything: the retracted fact is no candidate, the index survives.
    let state = state.with_records(vec![retract(11, by_scan[0])]);
    let fresh = fold(records.iter().cloned().chain([late.clone(), retract(11, by_scan[0])]).collect::<Vec<_>>());
    assert_eq!(state.same_thing(&probe), fresh.same_thing(&probe));
    assert!(!state.same_thing(&probe).contains(&by_scan[0]));
}

/// The supersessions naming a record are found by look-up as they were by scanning every entry,
/// and the look-up follows the state through writes in place and a re-fold.
#[test]
fn the_supersessions_naming_a_record_are_looked_up_across_writes() {
    let a = fact(0, "Deploys go out on Tuesdays", 700);
    let b = fact(1, "Deploys go out on Thursdays", 700);
    let scan = |state: &State, old: RecordId| -> Vec<RecordId> {
        state
            .entries
            .values()
            .filter(|e| matches!(&e.record.payload, Payload::Supersession(s) if s.old == old))
            .map(|e| e.id)
            .collect()
    };
    let first = supersede(2, a.0, Some(b.0));
    let state = fold(vec![a.clone(), b.clone(), first.clone()]);
    assert_eq!(state.supersessions_of(a.0), scan(&state, a.0).as_slice());
    assert_eq!(state.supersessions_of(a.0), [first.0].as_slice());
    // Built now; a second supersession of the same fact re-folds, a third record joins in place.
    let c = fact(3, "Deploys go out on Fridays", 700);
    let second = supersede(4, a.0, Some(c.0));
    let state = state.with_records(vec![c.clone(), second.clone()]);
    let mut expected = scan(&state, a.0);
    expected.sort();
    let mut found = state.supersessions_of(a.0).to_vec();
    found.sort();
    assert_eq!(found, expected);
    assert_eq!(found.len(), 2);
    let third = supersede(5, c.0, None);
    let state = state.with_records(vec![third.clone()]);
    assert_eq!(state.supersessions_of(c.0), [third.0].as_slice());
    assert!(state.supersessions_of(b.0).is_empty());
}

/// The state's list of constraints follows it through writes in place and a re-fold.
#[test]
fn the_constraint_list_follows_the_state() {
    let constraint = |secs: i64, s: &str| at(secs, Kind::Fact, Payload::Fact(Fact::new(FactType::Constraint, s)), "");
    let never = constraint(0, "Never log card numbers");
    let state = fold(vec![never.clone(), fact(1, "Deploys go out on Tuesdays", 700)]);
    assert_eq!(state.constraint_ids(), [never.0].as_slice());
    let keys = constraint(2, "Keys rotate every 90 days");
    let state = state.with_records(vec![keys.clone()]);
    let mut ids = state.constraint_ids().to_vec();
    ids.sort();
    let mut expected = vec![never.0, keys.0];
    expected.sort();
    assert_eq!(ids, expected, "grown in place");
    // The rows recall weighs say what the entries say, after a write in place too.
    let rows = |state: &State| -> Vec<(RecordId, Status, i32)> {
        let mut r: Vec<_> = state.constraint_rows().iter().map(|c| (c.id, c.status, c.confidence.0)).collect();
        r.sort_by_key(|x| x.0);
        r
    };
    let entries = |state: &State| -> Vec<(RecordId, Status, i32)> {
        let mut r: Vec<_> = state
            .constraint_ids()
            .iter()
            .map(|id| {
                let e = &state.entries[id];
                (e.id, e.status, e.confidence.0)
            })
            .collect();
        r.sort_by_key(|x| x.0);
        r
    };
    assert_eq!(rows(&state), entries(&state));
    let outdated = supersede(3, keys.0, None);
    let state = state.with_records(vec![outdated]);
    assert_eq!(rows(&state), entries(&state), "an outdated mark in place");
    assert!(rows(&state).iter().any(|r| r.0 == keys.0 && r.1 == Status::Outdated));
    let state = state.with_records(vec![retract(3, never.0), constraint(4, "Backups are tested monthly")]);
    assert_eq!(rows(&state), entries(&state), "a re-fold");
    assert!(rows(&state).iter().any(|r| r.0 == never.0 && r.1 == Status::Retracted));
    assert_eq!(state.constraint_ids().len(), 3, "grown through a re-fold, the retracted one still listed");
    assert_eq!(
        fold(state.entries.values().map(|e| (e.id, e.record.clone())).collect::<Vec<_>>()).constraint_ids().len(),
        3
    );
}
