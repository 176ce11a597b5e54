//! A conversation assembled from the shared StateBench timelines (public text), and plain Okapi
//! BM25 over its turns, the baseline such a memory is measured against.

use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

pub fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect()).unwrap_or_default()
}

/// One split's conversation as an agent hears it: every timeline a session (`Dn`), every turn a
/// line `[Dn:t] Name: text`, in order; and each query with its evidence, the turns of its own
/// session that hold a term the answer must mention. The timelines are generated from templates,
/// so many say the same words verbatim; `distinct` keeps only timelines none of whose turns was
/// said before (every piece of evidence then exists once), otherwise all of them.
pub struct Conversation {
    pub turns: Vec<String>,
    /// (prompt, indexes of its evidence turns)
    pub questions: Vec<(String, Vec<usize>)>,
}

pub fn conversation(path: &Path, distinct: bool) -> Conversation {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut turns, mut questions) = (Vec::new(), Vec::new());
    let mut spoken: std::collections::HashSet<String> = Default::default();
    for (d, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let t: Value = serde_json::from_str(line).expect("a timeline per line");
        let said: Vec<&str> = t["events"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["type"] == "conversation_turn")
            .filter_map(|e| e["text"].as_str())
            .collect();
        if distinct && said.iter().any(|x| spoken.contains(*x)) {
            continue;
        }
        spoken.extend(said.iter().map(|x| x.to_string()));
        let user = t["initial_state"]["identity_role"]["user_name"].as_str().unwrap_or("User").to_string();
        let first = turns.len();
        let mut n = 0;
        for e in t["events"].as_array().into_iter().flatten() {
            match e["type"].as_str() {
                Some("conversation_turn") => {
                    n += 1;
                    let who = if e["speaker"] == "assistant" { "Assistant" } else { user.as_str() };
                    let said = e["text"].as_str().unwrap_or_default().split_whitespace().collect::<Vec<_>>().join(" ");
                    turns.push(format!("[D{}:{n}] {who}: {said}", d + 1));
                }
                Some("query") => {
                    let must: Vec<String> =
                        strings(&e["ground_truth"]["must_mention"]).iter().map(|m| m.to_lowercase()).collect();
                    let evidence: Vec<usize> = (first..turns.len())
                        .filter(|&i| {
                            let turn = turns[i].to_lowercase();
                            must.iter().any(|m| turn.contains(m.as_str()))
                        })
                        .collect();
                    if !evidence.is_empty() {
                        questions.push((e["prompt"].as_str().unwrap_or_default().to_string(), evidence));
                    }
                }
                _ => {}
            }
        }
    }
    Conversation { turns, questions }
}

pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Plain Okapi BM25 (k1 1.2, b 0.75) over `docs`: the indexes of the best `k` for `query`.
pub fn bm25_top(docs: &[Vec<String>], query: &str, k: usize) -> Vec<usize> {
    let n = docs.len() as f64;
    let avg = docs.iter().map(Vec::len).sum::<usize>() as f64 / n.max(1.0);
    let mut df: HashMap<&str, usize> = HashMap::new();
    for d in docs {
        let mut seen: Vec<&str> = d.iter().map(String::as_str).collect();
        seen.sort_unstable();
        seen.dedup();
        for w in seen {
            *df.entry(w).or_default() += 1;
        }
    }
    let q = words(query);
    let mut scored: Vec<(f64, usize)> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let len = d.len() as f64;
            let score = q
                .iter()
                .map(|w| {
                    let tf = d.iter().filter(|x| *x == w).count() as f64;
                    let df = df.get(w.as_str()).copied().unwrap_or(0) as f64;
                    let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                    idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len / avg))
                })
                .sum();
            (score, i)
        })
        .filter(|(s, _)| *s > 0.0)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(k).map(|(_, i)| i).collect()
}
