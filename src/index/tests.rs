//! Unit tests of the caches: interrupted builds and catch-up.
use super::*;
use crate::embed::HashEmbedder;
use crate::record::{Fact, FactType, Kind, Milli, Provenance, Timestamp};

fn fact(i: usize) -> (RecordId, Record) {
    let r = Record {
        kind: Kind::Fact,
        payload: Payload::Fact(Fact {
            fact_type: FactType::Pattern,
            subject: format!("Fact number {i} about subsystem {}", i % 13),
            scope: "project".into(),
            tags: vec![],
            key: None,
            provenance: Provenance::Observed,
            confidence: Milli(700),
            valid_from: None,
            valid_to: None,
            depends_on: vec![],
            relations: vec![],
            anchors: vec![],
            suggestion: None,
        }),
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
    let cut = Indexes::open(&dir, &state, &tips, &|_| None, Some(&mut failing), &mut |_, _| {});
    assert!(matches!(cut, Err(IndexError::Embed(_))), "the embedder stopped part-way");

    let mut embedder = HashEmbedder::new(32);
    let mut calls = Vec::new();
    let (idx, refresh) =
        Indexes::open(&dir, &state, &tips, &|_| Some(vec![]), Some(&mut embedder), &mut |d, t| calls.push((d, t)))
            .expect("reopen");
    match refresh {
        Refresh::CaughtUp { added: 0, embedded } => assert_eq!(embedded, n - SAVE_EVERY, "only the unsaved rest"),
        other => panic!("expected a catch-up of vectors only, got {other:?}"),
    }
    assert_eq!(idx.vectors.as_ref().map(Vectors::len), Some(n));
    assert_eq!(calls.last().copied(), Some((n - SAVE_EVERY, n - SAVE_EVERY)), "progress counts the whole rest");
    let (_, again) =
        Indexes::open(&dir, &state, &tips, &|_| Some(vec![]), Some(&mut embedder), &mut |_, _| {}).expect("open again");
    assert!(matches!(again, Refresh::UpToDate), "{again:?}");
}
