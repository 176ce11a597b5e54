//! The Construct's place in recall, calibrated with the real model on fixtures/construct/: patterns
//! must appear for questions they answer and stay away from questions about a project's own facts
//! (the recall fixture's queries). Both rates are pinned for `construct::for_recall`.

use git_neo::construct::{for_recall, Library, RECALL_PATTERNS};
use git_neo::embed::{FastEmbedder, ModelPaths};

struct Labelled {
    query: String,
    /// Patterns that must appear (a question the pattern answers).
    expect: Vec<String>,
    /// Patterns that may appear (a project question a pattern also bears on).
    allow: Vec<String>,
}

fn fixture() -> Vec<Labelled> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/construct/queries.jsonl");
    let names = |v: &serde_json::Value| -> Vec<String> {
        v.as_array().expect("list").iter().map(|s| s.as_str().expect("name").to_string()).collect()
    };
    std::fs::read_to_string(path)
        .expect("fixture")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json");
            Labelled {
                query: v["query"].as_str().expect("query").to_string(),
                expect: names(&v["expect"]),
                allow: names(&v["allow"]),
            }
        })
        .collect()
}

/// (share of answerable questions that show an expected pattern, share of all questions that show
/// a pattern they should not), given the patterns shown for each question.
fn rates(fixture: &[Labelled], shown: &[Vec<String>]) -> (f64, f64) {
    let (mut answerable, mut answered, mut stray) = (0, 0, 0);
    for (q, shown) in fixture.iter().zip(shown) {
        if !q.expect.is_empty() {
            answerable += 1;
            answered += usize::from(shown.iter().any(|n| q.expect.iter().any(|e| e == n)));
        }
        stray += usize::from(shown.iter().any(|n| !q.expect.iter().chain(&q.allow).any(|e| e == n)));
    }
    (answered as f64 / answerable as f64, stray as f64 / fixture.len() as f64)
}

/// Without the model recall falls back to BM25 alone, with its own absolute threshold.
#[test]
fn without_the_model_only_strong_lexical_matches_show() {
    let mut library = Library::load(None).expect("shipped patterns");
    let fixture = fixture();
    let shown: Vec<Vec<String>> = fixture
        .iter()
        .map(|q| {
            let hits = library.search(&q.query, RECALL_PATTERNS, None).expect("search");
            for_recall(hits).into_iter().map(|h| h.name).collect()
        })
        .collect();
    let (answered, stray) = rates(&fixture, &shown);
    assert!(answered >= 0.5, "patterns shown for {answered:.3} of the questions they answer");
    assert!(stray <= 0.06, "a pattern that does not apply shown for {stray:.3} of the questions");
    let everything: Vec<Vec<String>> = fixture
        .iter()
        .map(|q| library.search(&q.query, RECALL_PATTERNS, None).expect("search").into_iter().map(|h| h.name).collect())
        .collect();
    assert!(rates(&fixture, &everything).1 > 0.5, "every lexical hit would show a stray pattern for most questions");
}

#[test]
#[ignore = "needs the model: scripts/install-model.sh"]
fn patterns_show_for_questions_they_answer_and_not_for_project_facts() {
    let paths = ModelPaths::in_cache(&crate::quality::model_root());
    assert!(paths.missing().is_empty(), "the embedding model is not installed: run scripts/install-model.sh");
    let mut embedder = FastEmbedder::load(&paths).expect("load the model");
    let mut library = Library::load(None).expect("shipped patterns");
    let fixture = fixture();
    assert!(fixture.iter().filter(|q| q.expect.is_empty()).count() >= 60, "the recall fixture's queries");
    assert!(fixture.iter().filter(|q| !q.expect.is_empty()).count() >= 26, "two questions per pattern");
    let shown = |threshold: bool, library: &mut Library, embedder: &mut FastEmbedder| -> Vec<Vec<String>> {
        fixture
            .iter()
            .map(|q| {
                let hits = library.search(&q.query, RECALL_PATTERNS, Some(embedder)).expect("search");
                let hits = if threshold { for_recall(hits) } else { hits };
                hits.into_iter().map(|h| h.name).collect()
            })
            .collect()
    };
    let (answered, stray) = rates(&fixture, &shown(true, &mut library, &mut embedder));
    let (answered_unfiltered, stray_unfiltered) = rates(&fixture, &shown(false, &mut library, &mut embedder));
    eprintln!(
        "construct in recall: answered {answered:.3}, stray {stray:.3} (every search hit: {answered_unfiltered:.3}, {stray_unfiltered:.3})"
    );
    assert!(answered >= 0.65, "patterns shown for {answered:.3} of the questions they answer");
    assert!(stray <= 0.05, "a pattern that does not apply shown for {stray:.3} of the questions");
    assert!(stray_unfiltered > 0.5, "without the threshold most questions show a stray pattern: the test can fail");
}
