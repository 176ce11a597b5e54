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
    let (reopened, r) =
        Indexes::open(&dir, &new, &["b".into()], &since, Some(&mut embedder), true, &mut |_, _| {}).expect("read");
    assert!(matches!(r, Refresh::UpToDate) && reopened.lexical_complete(), "{r:?}");
}
