//! The write-time filter on real code nobody here wrote: 2,079 functions in Python (CPython's
//! standard library, PSF-2.0), Rust (crates under MIT or Apache-2.0) and JavaScript (npm's bundled
//! dependencies, ISC/MIT), each with its source and license in `fixtures/code/functions.jsonl`
//! (built by `scripts/build-code-corpus.py`). Code is ordinary content for a coding agent's memory:
//! none of it may be refused as injection, and secrets rules may fire only on what really looks
//! like a credential (the corpus has none).

use git_neo::redact;

#[test]
fn the_filter_accepts_real_code_in_three_languages() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/code/functions.jsonl"))
        .expect("the code corpus fixture");
    let mut per_lang: std::collections::BTreeMap<String, usize> = Default::default();
    let mut refused = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("one JSON object per line");
        let (lang, source, code) =
            (v["lang"].as_str().unwrap_or(""), v["source"].as_str().unwrap_or(""), v["text"].as_str().unwrap_or(""));
        assert!(!v["license"].as_str().unwrap_or("").is_empty(), "{source} has no license");
        *per_lang.entry(lang.to_string()).or_default() += 1;
        for f in redact::scan(code) {
            refused.push(format!("{lang} {source} line {}: {} ({})", f.line, f.rule, f.masked));
        }
    }
    let total: usize = per_lang.values().sum();
    assert!(total >= 2_000, "the corpus has {total} functions; it needs at least 2,000");
    assert!(per_lang.len() >= 3 && per_lang.values().all(|n| *n >= 200), "{per_lang:?}");
    assert!(refused.is_empty(), "{} of {total} functions refused:\n{}", refused.len(), refused.join("\n"));
}
