//! Unit tests of the caches: interrupted builds and catch-up.
use super::*;
use crate::embed::{EmbedError, HashEmbedder};
use crate::record::{Fact, FactType, Kind, Timestamp};

fn fact(i: usize) -> (RecordId, Record) {
    let r = Record {
        kind: Kind::Fact,
        payload: Payload::Fact(Fact::new(FactType::Pattern, format!("Fact number {i} about subsystem {}", i % 13))),
        author: "Ada <ada@example.com>".into(),
        created_at: Timestamp(1_770_000_000 + i as i64),
        body: "x".repeat(i % 700),
    };
    (r.encode().0, r)
}

/// Fails once it has embedded `left` texts, as a reindex cut off part-way would stop.
struct Failing {
    inner: HashEmbedder,
    left: usize,
}

impl Embedder for Failing {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.len() > self.left {
            return Err(EmbedError::Model("cut off".into()));
        }
        self.left -= texts.len();
        self.inner.embed(texts)
    }
}

#[test]
fn an_interrupted_build_keeps_the_parts_it_saved_and_embeds_only_the_rest() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("index");
    let n = SAVE_EVERY * 2 + 500;
    let state = crate::state::fold((0..n).map(fact));
    let tips = vec!["tip".to_string()];
    let mut failing = Failing { inner: HashEmbedder::new(32), left: SAVE_EVERY + 100 };
    let cut = Indexes::open(&dir, &state, &tips, &|_| None, Some(&mut failing), true, &mut |_, _| {});
    assert!(matches!(cut, Err(IndexError::Embed(_))), "the embedder stopped part-way");

    let mut embedder = HashEmbedder::new(32);
    let mut calls = Vec::new();
    let (idx, refresh) =
        Indexes::open(&dir, &state, &tips, &|_| Some(vec![]), Some(&mut embedder), true, &mut |d, t| {
            calls.push((d, t))
        })
        .expect("reopen");
    match refresh {
        Refresh::CaughtUp { added: 0, embedded } => assert_eq!(embedded, n - SAVE_EVERY, "only the unsaved rest"),
        other => panic!("expected a catch-up of vectors only, got {other:?}"),
    }
    assert_eq!(idx.vectors.as_ref().map(Vectors::len), Some(n));
    assert_eq!(calls.last().copied(), Some((n - SAVE_EVERY, n - SAVE_EVERY)), "progress counts the whole rest");
    let (_, again) = Indexes::open(&dir, &state, &tips, &|_| Some(vec![]), Some(&mut embedder), true, &mut |_, _| {})
        .expect("open again");
    assert!(matches!(again, Refresh::UpToDate), "{again:?}");
}

#[test]
fn a_write_may_leave_the_lexical_index_behind_and_the_next_search_catches_it_up() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("index");
    let mut embedder = HashEmbedder::new(32);
    let old = crate::state::fold((0..20).map(fact));
    let (idx, _) =
        Indexes::open(&dir, &old, &["a".into()], &|_| None, Some(&mut embedder), true, &mut |_, _| {}).expect("open");
    assert!(idx.lexical_complete());
    let (new_id, _) = fact(20);
    let new = crate::state::fold((0..21).map(fact));
    let since = |_: &[String]| Some(vec![new_id]);
    let (mut idx, _) =
        Indexes::open(&dir, &new, &["b".into()], &since, Some(&mut embedder), false, &mut |_, _| {}).expect("write");
    assert!(!idx.lexical_complete(), "the write left the lexical index behind");
    assert_eq!(idx.vectors.as_ref().map(Vectors::len), Some(21), "vectors are current");
    assert!(idx.search_lexical("Fact number 20", 5).expect("search").iter().all(|(id, _)| *id != new_id));
    // A second process that only writes is up to date; one that searches catches up.
    let (_, again) =
        Indexes::open(&dir, &new, &["b".into()], &since, Some(&mut embedder), false, &mut |_, _| {}).expect("write");
    assert!(matches!(again, Refresh::UpToDate), "{again:?}");
    let r = idx.refresh(&new, &["b".into()], &since, Some(&mut embedder), true, &mut |_, _| {}).expect("refresh");
    assert!(matches!(r, Some(Refresh::CaughtUp { added: 0, .. })), "{r:?}");
    assert!(idx.lexical_complete());
    assert_eq!(idx.search_lexical("Fact number 20", 1).expect("search")[0].0, new_id);
    // The warm caches commit what they hold when let go.
    drop(idx);
    let (reopened, r) =
        Indexes::open(&dir, &new, &["b".into()], &since, Some(&mut embedder), true, &mut |_, _| {}).expect("read");
    assert!(matches!(r, Refresh::UpToDate) && reopened.lexical_complete(), "{r:?}");
}

#[test]
fn a_records_similarity_is_its_best_passage_as_the_search_ranks_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut embedder = HashEmbedder::new(64);
    // One long record of several passages among short ones.
    let long_body: String =
        (0..12).map(|i| format!("## Part {i}\n\n{}\n\n", format!("topic{i} words ").repeat(40))).collect();
    let long = Record {
        kind: Kind::Fact,
        payload: Payload::Fact(Fact::new(FactType::Pattern, "A long record")),
        author: "Ada <ada@example.com>".into(),
        created_at: Timestamp(1_770_000_000),
        body: long_body,
    };
    let long_id = long.encode().0;
    let state = crate::state::fold((0..30).map(fact).chain([(long_id, long)]));
    let (idx, _) = Indexes::open(
        &tmp.path().join("i"),
        &state,
        &["t".into()],
        &|_| None,
        Some(&mut embedder),
        true,
        &mut |_, _| {},
    )
    .expect("open");
    let q = embedder.embed(&["topic7 words".to_string()]).expect("embed").remove(0);
    let searched = idx.search_passages(&q, 40).expect("search");
    let ids: Vec<RecordId> = searched.iter().map(|s| s.0).collect();
    let measured = idx.similarities(&ids, &q);
    assert_eq!(measured.len(), ids.len(), "every indexed record has a similarity");
    for (id, cos, passage) in &searched {
        let m = measured.iter().find(|m| m.0 == *id).expect("measured");
        assert!((m.1 - cos).abs() < 1e-3, "{id}: measured {} against searched {cos}", m.1);
        assert_eq!(m.2, *passage, "the same best passage");
    }
    let long_match = measured.iter().find(|m| m.0 == long_id).expect("the long record");
    assert!(long_match.2 > 0, "a later passage matched best: {long_match:?}");
    assert!(idx.similarities(&[RecordId::of_bytes(b"unknown")], &q).is_empty(), "an unknown id has none");
}

/// A record of `passages` passages whose first is much longer than the rest.
fn long_fact(i: usize, passages: usize) -> (RecordId, Record) {
    let mut body = format!("{}\n\n", "opening words of some length ".repeat(40));
    for p in 1..passages {
        body.push_str(&format!("## Part {p}\n\nshort part {p} of record {i}\n\n"));
    }
    let r = Record {
        kind: Kind::Fact,
        payload: Payload::Fact(Fact::new(FactType::Pattern, format!("Long record {i}"))),
        author: "Ada <ada@example.com>".into(),
        created_at: Timestamp(1_770_000_000 + i as i64),
        body,
    };
    (r.encode().0, r)
}

#[test]
fn a_build_saved_part_by_part_keeps_every_passage_of_every_record() {
    // Thousands of records of several passages: the build saves and folds its parts several
    // times, while some records have only part of their passages embedded.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("index");
    let n = SAVE_EVERY + SAVE_EVERY / 2;
    let state = crate::state::fold((0..n).map(|i| long_fact(i, 3)));
    let tips = vec!["tip".to_string()];
    let mut embedder = HashEmbedder::new(32);
    let (idx, refresh) =
        Indexes::open(&dir, &state, &tips, &|_| None, Some(&mut embedder), true, &mut |_, _| {}).expect("build");
    assert!(matches!(refresh, Refresh::Rebuilt { .. }), "{refresh:?}");
    let want = n * 3;
    assert_eq!(idx.stamp.vectors, want);
    assert_eq!(idx.vectors.as_ref().map(Vectors::len), Some(want), "the building process holds every passage");
    drop(idx);
    let (reopened, again) =
        Indexes::open(&dir, &state, &tips, &|_| Some(vec![]), Some(&mut embedder), true, &mut |_, _| {})
            .expect("reopen");
    assert!(matches!(again, Refresh::UpToDate), "nothing to embed again: {again:?}");
    assert_eq!(reopened.vectors.as_ref().map(Vectors::len), Some(want));
}

/// Caches in `dir` built for twenty facts at tip "a": what a warm session holds before it writes.
fn open_at_twenty(dir: &std::path::Path, embedder: &mut HashEmbedder) -> Indexes {
    let old = crate::state::fold((0..20).map(fact));
    Indexes::open(dir, &old, &["a".into()], &|_| None, Some(embedder), true, &mut |_, _| {}).expect("open").0
}

/// A warm session's catch-up after its own write: the new record is held in the lexical index's
/// memory (searchable, not committed), the new vectors stay in memory, and letting the caches go
/// writes both, unless another process changed the caches since.
#[test]
fn a_warm_catch_up_holds_its_records_and_writes_them_when_let_go() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("index");
    let mut embedder = HashEmbedder::new(32);
    let mut warm = open_at_twenty(&dir, &mut embedder);
    // What a tree diff from the stamped tips would say: tip "a" held 20 records, "b" 21, "c" 22.
    let held = |tip: &str| match tip {
        "a" => 20,
        "b" => 21,
        _ => 22,
    };
    let since = |now: usize| move |old: &[String]| Some((held(&old[0])..now).map(|i| fact(i).0).collect::<Vec<_>>());
    let (new_id, _) = fact(20);
    let new = crate::state::fold((0..21).map(fact));
    let r = warm.refresh(&new, &["b".into()], &since(21), Some(&mut embedder), true, &mut |_, _| {}).expect("refresh");
    assert!(matches!(r, Some(Refresh::CaughtUp { added: 1, embedded: 1 })), "{r:?}");
    assert_eq!(warm.search_lexical("Fact number 20", 1).expect("search")[0].0, new_id, "held, and found");
    assert_eq!(warm.vectors.as_ref().map(Vectors::len), Some(21));
    assert_eq!(warm.lexical.held(), 1);
    let on_disk = || Lexical::open(&dir.join("lexical")).expect("lexical").num_docs();
    assert_eq!(on_disk(), 20, "nothing committed for one record");

    // Another process meanwhile finds the vector files and the lexical index one short, and adds
    // only that one to each.
    let (other, r) =
        Indexes::open(&dir, &new, &["b".into()], &since(21), Some(&mut embedder), true, &mut |_, _| {}).expect("other");
    assert!(matches!(r, Refresh::CaughtUp { added: 0, embedded: 1 }), "{r:?}");
    drop(other);
    assert_eq!(on_disk(), 21);

    // The warm session lets go of the record the other process committed, and never adds it
    // twice.
    let r = warm.refresh(&new, &["b".into()], &since(21), Some(&mut embedder), true, &mut |_, _| {}).expect("refresh");
    assert!(matches!(r, Some(Refresh::UpToDate)), "{r:?}");
    assert_eq!((warm.lexical.held(), warm.lexical.num_docs()), (0, 21));
    assert_eq!(warm.search_lexical("Fact number 20", 1).expect("search")[0].0, new_id);

    // Let go, the warm caches write what they held: the next process has nothing to do.
    let newest = crate::state::fold((0..22).map(fact));
    let r =
        warm.refresh(&newest, &["c".into()], &since(22), Some(&mut embedder), true, &mut |_, _| {}).expect("refresh");
    assert!(matches!(r, Some(Refresh::CaughtUp { added: 1, embedded: 1 })), "{r:?}");
    assert_eq!(on_disk(), 21);
    drop(warm);
    assert_eq!(on_disk(), 22, "committed when let go");
    let (idx, r) = Indexes::open(&dir, &newest, &["c".into()], &since(22), Some(&mut embedder), true, &mut |_, _| {})
        .expect("open");
    assert!(matches!(r, Refresh::UpToDate), "{r:?}");
    assert_eq!(idx.vectors.as_ref().map(Vectors::len), Some(22));
}

/// A warm session's catch-up after the write of one record, the `n`-th: the memory now holds `n`
/// records, its tip is named for `n`, and the tree diff lists that record alone. Its id.
fn catch_up_one(warm: &mut Indexes, embedder: &mut HashEmbedder, n: usize) -> RecordId {
    let state = crate::state::fold((0..n).map(fact));
    let (id, _) = fact(n - 1);
    let tip = format!("t{n}");
    let r = warm.refresh(&state, std::slice::from_ref(&tip), &|_| Some(vec![id]), Some(embedder), true, &mut |_, _| {});
    assert!(matches!(r, Ok(Some(Refresh::CaughtUp { added: 1, .. }))), "{n}: {r:?}");
    id
}

/// A warm session holds at most `HELD_UP_TO` records in memory: the catch-up that would hold
/// more commits them all, and the keys stay the records' positions.
#[test]
fn a_warm_session_commits_what_it_held_once_it_holds_enough() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("index");
    let mut embedder = HashEmbedder::new(32);
    let mut warm = open_at_twenty(&dir, &mut embedder);
    let on_disk = || Lexical::open(&dir.join("lexical")).expect("lexical").num_docs();
    for n in 21..=(21 + lexical::HELD_UP_TO) {
        let id = catch_up_one(&mut warm, &mut embedder, n);
        let held = n - 20;
        if held <= lexical::HELD_UP_TO {
            assert_eq!((warm.lexical.held(), on_disk()), (held, 20), "{n}");
        } else {
            warm.lexical.settle().expect("settle");
            assert_eq!((warm.lexical.held(), on_disk()), (0, n as u64), "{n}: all committed");
        }
        assert_eq!(warm.search_lexical(&format!("Fact number {}", n - 1), 1).expect("search")[0].0, id);
    }
}

/// Similarity by id reads each id's key from a map made at the first question: records a
/// catch-up adds afterwards are found by it, and an id asked twice is measured once.
#[test]
fn records_added_after_the_first_question_by_id_are_measured_too() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("index");
    let mut embedder = HashEmbedder::new(32);
    let mut warm = open_at_twenty(&dir, &mut embedder);
    let q = embedder.embed(&["Fact number 3".to_string()]).expect("embed").remove(0);
    let (three, _) = fact(3);
    let measured = warm.similarities(&[three, three], &q);
    assert_eq!(measured.len(), 1, "{measured:?}");
    assert!(warm.passage_vector(three, 0).is_some());
    for n in 21..24 {
        catch_up_one(&mut warm, &mut embedder, n);
    }
    let new: Vec<RecordId> = (20..23).map(|i| fact(i).0).collect();
    let mut asked = new.clone();
    asked.push(three);
    let measured = warm.similarities(&asked, &q);
    let got: Vec<RecordId> = measured.iter().map(|m| m.0).collect();
    // In key order: the old record first, then the new ones as they were added.
    assert_eq!(got, [vec![three], new.clone()].concat());
    for (i, id) in new.iter().enumerate() {
        let v = warm.passage_vector(*id, 0).expect("the new record's vector");
        let own = embedder.embed(&crate::index::vector_texts(&fact(20 + i).1)[..1]).expect("embed");
        assert!((crate::embed::cosine(&v, &own[0]) - 1.0).abs() < 1e-3, "{id}: its own vector");
    }
}

/// Caches another process changed since a warm session caught up are not overwritten by the
/// vectors the session held back.
#[test]
fn held_back_vectors_never_overwrite_another_processs_caches() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("index");
    let mut embedder = HashEmbedder::new(32);
    let mut warm = open_at_twenty(&dir, &mut embedder);
    let (id20, _) = fact(20);
    let new = crate::state::fold((0..21).map(fact));
    let r = warm
        .refresh(&new, &["b".into()], &|_| Some(vec![id20]), Some(&mut embedder), true, &mut |_, _| {})
        .expect("refresh");
    assert!(matches!(r, Some(Refresh::CaughtUp { added: 1, .. })), "{r:?}");
    // Another process writes two more records and catches the caches up to them.
    let (id21, _) = fact(21);
    let (id22, _) = fact(22);
    let newest = crate::state::fold((0..23).map(fact));
    let (other, _) = Indexes::open(
        &dir,
        &newest,
        &["c".into()],
        &|_| Some(vec![id21, id22]),
        Some(&mut embedder),
        true,
        &mut |_, _| {},
    )
    .expect("other");
    let on_disk = std::fs::read(dir.join("vectors-new.usearch")).expect("the other's vectors");
    drop(other);
    drop(warm);
    assert_eq!(std::fs::read(dir.join("vectors-new.usearch")).expect("vectors"), on_disk, "the other's files stand");
    let (idx, r) = Indexes::open(&dir, &newest, &["c".into()], &|_| None, Some(&mut embedder), true, &mut |_, _| {})
        .expect("open");
    assert!(matches!(r, Refresh::UpToDate), "{r:?}");
    assert_eq!(idx.vectors.as_ref().map(Vectors::len), Some(23));
}

/// The records `from..to` as a warm session's catch-up receives them after its writes.
fn catch_up_many(warm: &mut Indexes, embedder: &mut HashEmbedder, from: usize, to: usize) -> Option<Refresh> {
    let state = crate::state::fold((0..to).map(fact));
    let added: Vec<RecordId> = (from..to).map(|i| fact(i).0).collect();
    warm.refresh(&state, &[format!("t{to}")], &|_| Some(added.clone()), Some(embedder), true, &mut |_, _| {})
        .expect("refresh")
}

/// Caches opened afresh at `to` records, as another process finds them.
fn reopened(dir: &std::path::Path, embedder: &mut HashEmbedder, to: usize) -> (Indexes, Refresh) {
    let state = crate::state::fold((0..to).map(fact));
    Indexes::open(dir, &state, &[format!("t{to}")], &|_| None, Some(embedder), true, &mut |_, _| {}).expect("open")
}

/// Caches in a new `tmp/index` warm at twenty records, whose catch-up of 1,180 more started a
/// fold beside.
fn folding_at_1200(tmp: &tempfile::TempDir) -> (std::path::PathBuf, HashEmbedder, Indexes) {
    let dir = tmp.path().join("index");
    let mut embedder = HashEmbedder::new(32);
    let mut warm = open_at_twenty(&dir, &mut embedder);
    let r = catch_up_many(&mut warm, &mut embedder, 20, 1_200);
    assert!(matches!(r, Some(Refresh::CaughtUp { added: 1_180, embedded: 1_180 })), "{r:?}");
    assert!(warm.vectors.as_ref().is_some_and(Vectors::folding), "folding beside");
    (dir, embedder, warm)
}

fn wait_for_fold(warm: &Indexes) {
    let waited = std::time::Instant::now();
    while warm.vectors.as_ref().is_some_and(|v| v.folding()) && !warm.vectors.as_ref().is_some_and(Vectors::fold_built)
    {
        assert!(waited.elapsed() < std::time::Duration::from_secs(60), "the fold never finished");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A warm session's catch-up that makes the new part too large folds it beside: the catch-up
/// returns at once, the caches on disk stay complete (another process finds nothing to do),
/// every record is found meanwhile, and the folded index lands between commands
/// ([`Indexes::land_fold`]).
#[test]
fn a_warm_session_folds_its_vectors_beside_and_lands_the_fold_later() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (dir, mut embedder, mut warm) = folding_at_1200(&tmp);
    let q = embedder.embed(&crate::index::vector_texts(&fact(1_150).1)[..1]).expect("embed").remove(0);
    assert_eq!(warm.search_vectors(&q, 1).expect("search")[0].0, fact(1_150).0);
    let (other, r) = reopened(&dir, &mut embedder, 1_200);
    assert!(matches!(r, Refresh::UpToDate), "{r:?}");
    assert_eq!(other.vectors.as_ref().map(Vectors::parts), Some((20, 1_180)), "the parts as they were");
    drop(other);
    // Between commands the session lays its vectors out for the exact scan, the fold running.
    warm.prepare_scan().expect("lay out");
    assert!(warm.vectors.as_ref().is_some_and(Vectors::scans_laid_out));
    wait_for_fold(&warm);
    // Between commands the session lands it: the main part is the built index.
    assert!(warm.land_fold().expect("land the fold"));
    assert!(!warm.vectors.as_ref().is_some_and(Vectors::folding));
    assert_eq!(warm.vectors.as_ref().map(Vectors::parts), Some((1_200, 0)));
    assert!(warm.vectors.as_ref().is_some_and(Vectors::scans_laid_out), "the layout outlives the swap");
    let (other, r) = reopened(&dir, &mut embedder, 1_200);
    assert!(matches!(r, Refresh::UpToDate), "{r:?}");
    assert_eq!(other.vectors.as_ref().map(Vectors::parts), Some((1_200, 0)), "as written");
    drop(other);
    catch_up_many(&mut warm, &mut embedder, 1_200, 1_240);
    assert_eq!(warm.vectors.as_ref().map(Vectors::parts), Some((1_200, 40)));
    // The records the catch-up brought are laid out too, and recall's scan finds them.
    assert!(warm.vectors.as_ref().is_some_and(Vectors::scans_laid_out), "grown with the catch-up");
    for i in [3, 1_199, 1_239] {
        let q = embedder.embed(&crate::index::vector_texts(&fact(i).1)[..1]).expect("embed").remove(0);
        assert_eq!(warm.search_passages(&q, 1).expect("search")[0].0, fact(i).0, "record {i}");
    }
    drop(warm);
    let (idx, r) = reopened(&dir, &mut embedder, 1_240);
    assert!(matches!(r, Refresh::UpToDate), "{r:?}");
    assert_eq!(idx.vectors.as_ref().map(Vectors::parts), Some((1_200, 40)));
    for i in [0, 19, 20, 700, 1_199, 1_200, 1_239] {
        let q = embedder.embed(&crate::index::vector_texts(&fact(i).1)[..1]).expect("embed").remove(0);
        assert_eq!(idx.search_vectors(&q, 1).expect("search")[0].0, fact(i).0, "record {i}");
    }
}

/// A fold built beside is never swapped over caches another process wrote since: the session
/// finds the stamp changed, opens the caches afresh, and its fold is let go.
#[test]
fn a_fold_beside_never_lands_over_another_processs_caches() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (dir, mut embedder, mut warm) = folding_at_1200(&tmp);
    // Another process writes ten records and catches the caches up to them (folding in place).
    let (other, r) = reopened(&dir, &mut embedder, 1_210);
    assert!(matches!(r, Refresh::CaughtUp { added: 10, embedded: 10 }), "{r:?}");
    drop(other);
    let written = std::fs::read(dir.join("vectors.usearch")).expect("the other's vectors");
    wait_for_fold(&warm);
    assert!(!warm.land_fold().expect("land"), "never over the other's caches");
    let state = crate::state::fold((0..1_210).map(fact));
    let r = warm.refresh(&state, &["t1210".into()], &|_| None, Some(&mut embedder), true, &mut |_, _| {});
    assert!(matches!(r, Ok(None)), "the session must open the caches afresh: {r:?}");
    drop(warm);
    assert_eq!(std::fs::read(dir.join("vectors.usearch")).expect("vectors"), written, "the other's files stand");
    let (idx, r) = reopened(&dir, &mut embedder, 1_210);
    assert!(matches!(r, Refresh::UpToDate), "{r:?}");
    assert_eq!(idx.vectors.as_ref().map(Vectors::parts), Some((1_210, 0)));
}

/// A fold built beside also lands with the next save of the vectors, the records that arrived
/// meanwhile carried into the next new part.
#[test]
fn a_fold_beside_lands_with_the_next_save_of_the_vectors() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (dir, mut embedder, mut warm) = folding_at_1200(&tmp);
    wait_for_fold(&warm);
    // More than a warm session holds back: this catch-up saves the vectors, and swaps the fold in.
    catch_up_many(&mut warm, &mut embedder, 1_200, 1_240);
    assert!(!warm.vectors.as_ref().is_some_and(Vectors::folding));
    assert_eq!(warm.vectors.as_ref().map(Vectors::parts), Some((1_200, 40)));
    drop(warm);
    let (idx, r) = reopened(&dir, &mut embedder, 1_240);
    assert!(matches!(r, Refresh::UpToDate), "{r:?}");
    assert_eq!(idx.vectors.as_ref().map(Vectors::parts), Some((1_200, 40)));
}
