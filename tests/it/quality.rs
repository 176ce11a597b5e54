//! Recall quality on the fixture in fixtures/recall/: recall@5 and MRR for lexical-only,
//! vector-only and hybrid ranking with the real model. Hybrid must beat both; floors are pinned.

use crate::support::Sandbox;
use git_neo::embed::{Embedder, FastEmbedder, ModelPaths};
use git_neo::recall::{metrics, rank_flat, Mode};
use git_neo::record::{Payload, RecordId, Timestamp};
use std::collections::HashMap;

pub fn model_root() -> std::path::PathBuf {
    std::env::var_os("GIT_NEO_CACHE_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache/git-neo")))
        .expect("HOME is set")
}

#[test]
#[ignore = "needs the model: scripts/install-model.sh"]
fn hybrid_beats_lexical_and_vector_on_the_fixture() {
    let paths = ModelPaths::in_cache(&model_root());
    assert!(paths.missing().is_empty(), "the embedding model is not installed: run scripts/install-model.sh");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/recall");
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    sb.neo_ok(&repo, &["import", fixture.join("facts.jsonl").to_str().expect("utf-8")]);
    let fold = crate::support::fold_of(&repo);
    let state = &fold.1;
    let by_key: HashMap<String, RecordId> = state
        .iter()
        .filter_map(|e| match &e.record.payload {
            Payload::Fact(f) => f.key.clone().map(|k| (k, e.id)),
            _ => None,
        })
        .collect();
    assert_eq!(by_key.len(), 62);
    let mut embedder = FastEmbedder::load(&paths).expect("load the model");
    let indexes = crate::support::indexes_of(&fold, &mut embedder);
    let queries: Vec<serde_json::Value> = std::fs::read_to_string(fixture.join("queries.jsonl"))
        .expect("queries")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert!(queries.len() >= 40);
    let now = Timestamp::parse(crate::support::NOW).expect("time");
    let mut ranked: HashMap<&str, Vec<Vec<RecordId>>> = HashMap::new();
    let mut expected = Vec::new();
    for q in &queries {
        let text = q["query"].as_str().expect("query").to_string();
        let lexical = indexes.search_lexical(&text, 50).expect("lexical");
        let v = embedder.embed(std::slice::from_ref(&text)).expect("embed").remove(0);
        let vector = indexes.search_vectors(&v, 50).expect("vector");
        for (name, mode) in [("lexical", Mode::Lexical), ("vector", Mode::Vector), ("hybrid", Mode::Hybrid)] {
            ranked.entry(name).or_default().push(rank_flat(state, &lexical, &vector, mode, now));
        }
        expected.push(
            q["expected"]
                .as_array()
                .expect("expected")
                .iter()
                .map(|k| by_key[k.as_str().expect("key")])
                .collect::<Vec<_>>(),
        );
    }
    let m = |name: &str| metrics(&ranked[name], &expected, 5);
    let (lex, vec, hyb) = (m("lexical"), m("vector"), m("hybrid"));
    println!("| ranking | recall@5 | MRR |\n|---|---|---|");
    for (name, (r, mrr)) in [("lexical", lex), ("vector", vec), ("hybrid", hyb)] {
        println!("| {name} | {r:.3} | {mrr:.3} |");
    }
    assert!(hyb.0 >= lex.0 && hyb.0 >= vec.0, "hybrid recall@5 {hyb:?} must beat lexical {lex:?} and vector {vec:?}");
    assert!(hyb.1 > lex.1 && hyb.1 > vec.1, "hybrid MRR {hyb:?} must beat lexical {lex:?} and vector {vec:?}");
    assert!(
        hyb.0 >= HYBRID_RECALL_AT_5_FLOOR && hyb.1 >= HYBRID_MRR_FLOOR,
        "hybrid {hyb:?} fell below the pinned floors"
    );
}

/// The int8 products (what every way in runs) against the same model with f32 products, on the
/// recall fixture's facts: the vectors stay close (on SciFact's abstracts the cosine was 0.989 at
/// least), they are stamped with another model id (caches built with the f32 products are
/// rebuilt), and a text's vector is the same alone as among others (one text per call: the
/// activations' scale must not depend on what else is embedded).
#[test]
#[ignore = "needs the model: scripts/install-model.sh"]
fn int8_products_keep_the_vectors_and_do_not_depend_on_the_batch() {
    use git_neo::embed::RunOptions;
    let paths = ModelPaths::in_cache(&model_root());
    assert!(paths.missing().is_empty(), "the embedding model is not installed: run scripts/install-model.sh");
    let facts =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/recall/facts.jsonl"))
            .expect("facts");
    let texts: Vec<String> = facts
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json"))
        .map(|f| format!("{}\n{}", f["subject"].as_str().expect("subject"), f["body"].as_str().expect("body")))
        .collect();
    assert!(texts.len() >= 60);
    let mut int8 = FastEmbedder::load(&paths).expect("load the model");
    let mut f32 = FastEmbedder::load_with(&paths, &RunOptions { int8: false, ..RunOptions::default() }).expect("load");
    assert_ne!(int8.model_id(), f32.model_id(), "the f32 products' vectors are not the int8 ones");
    let a = int8.embed(&texts).expect("embed");
    let b = f32.embed(&texts).expect("embed");
    let mut cosines: Vec<f32> = a.iter().zip(&b).map(|(x, y)| git_neo::embed::cosine(x, y)).collect();
    cosines.sort_by(f32::total_cmp);
    println!("cosine int8 vs f32 products: min {:.4}, median {:.4}", cosines[0], cosines[cosines.len() / 2]);
    assert!(cosines[0] >= 0.98 && cosines[cosines.len() / 2] >= 0.99, "{cosines:?}");
    // Different from the f32 vectors, though: the products really are int8.
    assert!(cosines[cosines.len() - 1] < 0.99999, "{cosines:?}");
    for (i, text) in texts.iter().enumerate().step_by(7) {
        let alone = int8.embed(std::slice::from_ref(text)).expect("embed").remove(0);
        assert_eq!(alone, a[i], "text {i} alone and among {} others", texts.len() - 1);
    }
}

/// Floors pinned a little under the measured numbers (recall@5 0.984, MRR 0.817 when pinned).
const HYBRID_RECALL_AT_5_FLOOR: f64 = 0.95;
const HYBRID_MRR_FLOOR: f64 = 0.78;

/// Long records (fixtures/long/): questions answered deep inside a body. One vector per record
/// (its first window, as before passages) against one per passage, in the same run.
#[test]
#[ignore = "needs the model: scripts/install-model.sh"]
fn passages_find_answers_deep_inside_long_records() {
    let paths = ModelPaths::in_cache(&model_root());
    assert!(paths.missing().is_empty(), "the embedding model is not installed: run scripts/install-model.sh");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/long");
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    sb.neo_ok(&repo, &["import", fixture.join("records.jsonl").to_str().expect("utf-8")]);
    let fold = crate::support::fold_of(&repo);
    let state = &fold.1;
    let by_key: HashMap<String, RecordId> = state
        .iter()
        .filter_map(|e| match &e.record.payload {
            Payload::Fact(f) => f.key.clone().map(|k| (k, e.id)),
            _ => None,
        })
        .collect();
    assert!(by_key.len() >= 40, "at least 40 long records");
    let mut embedder = FastEmbedder::load(&paths).expect("load the model");
    let indexes = crate::support::indexes_of(&fold, &mut embedder);
    // Before passages: one vector per record, of its subject and body (the model reads the start).
    let ids: Vec<RecordId> = by_key.values().copied().collect();
    let whole: Vec<String> = ids
        .iter()
        .map(|id| {
            let e = &state.entries[id];
            format!("{}\n{}", e.record.summary(), e.record.body.trim_end())
        })
        .collect();
    let whole_vectors = embedder.embed(&whole).expect("embed");
    let queries: Vec<serde_json::Value> = std::fs::read_to_string(fixture.join("queries.jsonl"))
        .expect("queries")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert!(queries.len() >= 30);
    let now = Timestamp::parse(crate::support::NOW).expect("time");
    let (mut before, mut after, mut hybrid, mut expected) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for q in &queries {
        let text = q["query"].as_str().expect("query").to_string();
        let v = embedder.embed(std::slice::from_ref(&text)).expect("embed").remove(0);
        let mut single: Vec<(f32, RecordId)> =
            ids.iter().zip(&whole_vectors).map(|(id, w)| (w.iter().zip(&v).map(|(a, b)| a * b).sum(), *id)).collect();
        single.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        before.push(single.into_iter().map(|(_, id)| id).collect::<Vec<_>>());
        let vector = indexes.search_vectors(&v, 50).expect("vector");
        let lexical = indexes.search_lexical(&text, 50).expect("lexical");
        after.push(rank_flat(state, &lexical, &vector, Mode::Vector, now));
        hybrid.push(rank_flat(state, &lexical, &vector, Mode::Hybrid, now));
        expected.push(vec![by_key[q["expected"][0].as_str().expect("key")]]);
    }
    let (b, a, h) = (metrics(&before, &expected, 5), metrics(&after, &expected, 5), metrics(&hybrid, &expected, 5));
    println!("| long records | recall@5 | MRR |\n|---|---|---|");
    for (name, (r, mrr)) in [("one vector per record", b), ("one vector per passage", a), ("passages, hybrid", h)] {
        println!("| {name} | {r:.3} | {mrr:.3} |");
    }
    assert!(a.0 > b.0 && a.1 > b.1, "passages {a:?} must beat one vector per record {b:?}");
    assert!(h.0 >= LONG_HYBRID_RECALL_AT_5_FLOOR, "hybrid with passages {h:?} fell below the pinned floor");
}

/// Pinned a little under the measured number (0.971 when pinned; docs/recall.md has the table).
const LONG_HYBRID_RECALL_AT_5_FLOOR: f64 = 0.93;
