//! The write filter on public text: what share of each set the filter refuses, run the way a
//! write runs it (`redact::check` on a fact whose body is the text), with the rules that fired.
//!
//! `cargo bench --bench filter -- NAME=FILE.jsonl ...`: each file holds one JSON string per line
//! (a secret-bearing line, an injection prompt, a benign paragraph). A set named `benign*` is read
//! as the false-positive rate; the others as the detection rate. docs/security.md gives the
//! figures and where the sets come from.

// Tests and benches print, read the environment and run processes freely (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

use git_neo::record::{Fact, FactType, Kind, Payload, Record, Timestamp};
use std::collections::BTreeMap;
use std::time::Instant;

fn record(body: &str) -> Record {
    Record {
        kind: Kind::Fact,
        payload: Payload::Fact(Fact::new(FactType::Pattern, "A line from a public set")),
        author: "Bench <bench@example.com>".into(),
        created_at: Timestamp::parse("2026-03-01T12:00:00Z").expect("a valid time"),
        body: body.to_string(),
    }
}

fn main() {
    let sets: Vec<(String, String)> = std::env::args()
        .skip(1)
        .filter_map(|a| a.split_once('=').map(|(n, f)| (n.to_string(), f.to_string())))
        .collect();
    if sets.is_empty() {
        println!("filter: no sets given (cargo bench --bench filter -- secrets=FILE.jsonl benign=FILE.jsonl)");
        return;
    }
    println!("| set | texts | refused | share | µs/text (median) | rules that fired |");
    println!("|---|---:|---:|---:|---:|---|");
    for (name, file) in sets {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let texts: Vec<String> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let mut refused = 0usize;
        let mut rules: BTreeMap<String, usize> = BTreeMap::new();
        let mut times = Vec::with_capacity(texts.len());
        for t in &texts {
            // A body is at most 64 KiB; longer texts are cut, as a writer would have to.
            let mut end = t.len().min(64 * 1024);
            while !t.is_char_boundary(end) {
                end -= 1;
            }
            let r = record(&t[..end]);
            let start = Instant::now();
            let problems = git_neo::redact::check(&r);
            times.push(start.elapsed().as_secs_f64() * 1e6);
            if !problems.is_empty() {
                refused += 1;
                for p in problems {
                    let rule = p.message.split("rule ").nth(1).and_then(|s| s.split(')').next()).unwrap_or("other");
                    *rules.entry(rule.to_string()).or_default() += 1;
                }
            }
        }
        times.sort_by(f64::total_cmp);
        let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
        let fired: Vec<String> = rules.iter().map(|(r, n)| format!("{r} {n}")).collect();
        println!(
            "| {name} | {} | {refused} | {:.1}% | {median:.1} | {} |",
            texts.len(),
            100.0 * refused as f64 / texts.len().max(1) as f64,
            fired.join(", ")
        );
    }
}
