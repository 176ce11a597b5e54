//! The Construct: curated, attributed patterns about working on code with git and with agents.
//! What git-neo was taught, as opposed to the project memory, which holds what a project learned.
//!
//! This module owns the pattern format (front matter with `title`, `author`, `tags`; the sections
//! Intent, Forces, Solution, Consequences, References; under [`MAX_LINES`] lines), its parser
//! (pulldown-cmark for the markdown, serde_yaml for the front matter), the linter, and the
//! library: the shipped patterns plus a project's own, searchable like recall (BM25 through an
//! in-memory tantivy index, fused with vector similarity when an embedder is given). No I/O
//! except reading a project's pattern directory, which the caller names.

mod shipped;

pub use shipped::SHIPPED;

use crate::embed::Embedder;
use crate::index::lexical::Lexical;
use crate::record::{Problem, RecordId};
use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The sections every pattern has, in order.
pub const SECTIONS: [&str; 5] = ["Intent", "Forces", "Solution", "Consequences", "References"];

/// Patterns recall shows at most, after the project's own memory.
pub const RECALL_PATTERNS: usize = 3;

/// The least search score for a pattern to appear in recall (relevance, 0 to 1, with the model).
/// Calibrated with the real model on fixtures/construct/queries.jsonl (questions a pattern answers,
/// and the recall fixture's questions about a project's own facts, which should show none): at
/// 0.45 with [`RECALL_MARGIN`], 69% of the answerable questions show their pattern and 3.4% of all
/// questions show one that does not apply; the old 0.3 showed a stray pattern for 40% of them.
pub const RECALL_MIN_SCORE: f64 = 0.45;

/// How far below the best pattern another may score and still be shown beside it: a runner-up
/// well behind the best is usually a neighbour on the same vocabulary, not a second answer.
pub const RECALL_MARGIN: f64 = 0.1;

/// Without the model: the least raw BM25 score, and the share of the best match's, for a pattern
/// to appear in recall. A relative score cannot be the threshold (any best match scores 1.0, so a
/// single shared word such as "checkout" would attach a pattern). Calibrated on the same fixture:
/// 58% answered, 2.2% stray, against 92% and 89% with the relative score alone.
pub const RECALL_MIN_BM25: f32 = 6.0;
const RECALL_BM25_SHARE: f32 = 0.9;

/// The longest a pattern may be, in lines.
pub const MAX_LINES: usize = 300;

/// Where a pattern comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "source", rename_all = "lowercase")]
pub enum Source {
    /// Compiled into git-neo.
    Shipped,
    /// A project's own pattern directory.
    Project { path: PathBuf },
}

/// One parsed pattern.
#[derive(Clone, Debug, Serialize)]
pub struct Pattern {
    /// The file name without `.md`: how `show` names it.
    pub name: String,
    pub title: String,
    pub author: String,
    pub tags: Vec<String>,
    /// Section name -> its text (markdown source), for the sections present.
    pub sections: BTreeMap<String, String>,
    #[serde(flatten)]
    pub source: Source,
    /// The whole file.
    #[serde(skip)]
    pub text: String,
}

impl Pattern {
    /// The section's text, or an empty string.
    pub fn section(&self, name: &str) -> &str {
        self.sections.get(name).map(String::as_str).unwrap_or("")
    }

    /// What vector search embeds: title, tags and intent, the gist (a whole pattern is longer
    /// than the model reads, and its later sections dilute the vector).
    pub fn gist(&self) -> String {
        format!("{}\n{}\n{}", self.title, self.tags.join(" "), self.section("Intent"))
    }

    /// What lexical search indexes: title, tags and every section.
    pub fn search_text(&self) -> String {
        let mut s = format!("{}\n{}\n", self.title, self.tags.join(" "));
        for name in SECTIONS {
            s.push_str(self.section(name));
            s.push('\n');
        }
        s
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    title: Option<String>,
    author: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
}

/// Split `---\n<yaml>\n---\n` off the top.
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    Some((&rest[..end], &rest[end + 5..]))
}

/// Parse a pattern and check it: every problem at once, each naming its field or section.
/// The pattern is returned even with problems (as far as it could be read), for `show`.
pub fn parse(name: &str, text: &str, source: Source) -> (Pattern, Vec<Problem>) {
    let mut problems = Vec::new();
    let lines = text.lines().count();
    if lines > MAX_LINES {
        problems.push(Problem::new("file", format!("has {lines} lines; a pattern stays under {MAX_LINES}")));
    }
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
        problems.push(Problem::new("file", format!("{name:?} is not a kebab-case name such as revert-first")));
    }
    let (front, body) = match split_front_matter(text) {
        Some(parts) => parts,
        None => {
            problems
                .push(Problem::new("front matter", "is missing; start the file with ---, title:, author:, tags:, ---"));
            ("", text)
        }
    };
    let fm = if front.is_empty() {
        FrontMatter { title: None, author: None, tags: Vec::new() }
    } else {
        match serde_yaml::from_str::<FrontMatter>(front) {
            Ok(fm) => fm,
            Err(e) => {
                problems.push(Problem::new("front matter", format!("does not parse: {e}")));
                FrontMatter { title: None, author: None, tags: Vec::new() }
            }
        }
    };
    let title = fm.title.unwrap_or_default().trim().to_string();
    let author = fm.author.unwrap_or_default().trim().to_string();
    if title.is_empty() {
        problems.push(Problem::new("title", "is missing or empty; give the pattern a title"));
    }
    if author.is_empty() {
        problems.push(Problem::new("author", "is missing or empty; patterns are attributed: name who wrote it"));
    }
    let tags: Vec<String> = fm.tags.iter().map(|t| t.trim().to_lowercase()).filter(|t| !t.is_empty()).collect();
    if tags.is_empty() {
        problems.push(Problem::new("tags", "is missing or empty; give at least one tag"));
    }

    let sections = sections_of(body);
    for name in SECTIONS {
        match sections.get(name) {
            None => problems.push(Problem::new(name, "section is missing; add it as a level-2 heading (## Name)")),
            Some(t) if t.trim().is_empty() => problems.push(Problem::new(name, "section is empty")),
            Some(_) => {}
        }
    }
    let pattern = Pattern { name: name.to_string(), title, author, tags, sections, source, text: text.to_string() };
    (pattern, problems)
}

/// Level-2 headings and the markdown source under each, up to the next level-2 heading.
fn sections_of(body: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, usize)> = None;
    let mut heading: Option<(String, usize)> = None;
    let close = |out: &mut BTreeMap<String, String>, current: &Option<(String, usize)>, end: usize| {
        if let Some((name, start)) = current {
            out.insert(name.clone(), body[*start..end].trim().to_string());
        }
    };
    for (event, range) in Parser::new(body).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level: HeadingLevel::H2, .. }) => {
                close(&mut out, &current, range.start);
                current = None;
                heading = Some((String::new(), range.end));
            }
            Event::Text(t) | Event::Code(t) if heading.is_some() => {
                if let Some((h, _)) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(HeadingLevel::H2)) => {
                if let Some((h, _)) = heading.take() {
                    current = Some((h.trim().to_string(), range.end));
                }
            }
            _ => {}
        }
    }
    close(&mut out, &current, body.len());
    out
}

/// A lint finding, with the file it is about.
#[derive(Clone, Debug, Serialize)]
pub struct LintProblem {
    pub file: String,
    pub field: String,
    pub message: String,
}

/// A search hit.
#[derive(Clone, Debug, Serialize)]
pub struct Hit {
    pub name: String,
    pub title: String,
    pub intent: String,
    pub tags: Vec<String>,
    pub score: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
    /// The raw BM25 score, when the pattern matched lexically: recall's lexical-only threshold is
    /// absolute, since `score` is relative to the best match and so is 1.0 for any best match.
    #[serde(skip)]
    pub bm25: Option<f32>,
    #[serde(flatten)]
    pub source: Source,
}

/// Why the library could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConstructError {
    #[error("reading {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("construct search index: {0}")]
    Index(String),
    #[error("embedding construct patterns: {0}")]
    Embed(#[from] crate::embed::EmbedError),
}

/// The shipped patterns and a project's own, ready to search.
pub struct Library {
    pub patterns: Vec<Pattern>,
    /// Problems in project patterns, which are left out (shipped ones are linted in CI).
    pub problems: Vec<LintProblem>,
    lexical: Lexical,
    /// Pattern vectors, computed on first semantic search and kept (model id, vectors).
    vectors: Option<(String, Vec<Vec<f32>>)>,
    /// Where pattern vectors are cached between processes (see [`Library::cache_vectors_in`]).
    vector_cache: Option<PathBuf>,
}

/// The on-disk form of the pattern vector cache.
#[derive(serde::Serialize, serde::Deserialize)]
struct VectorCache {
    model: String,
    /// BLAKE3 of every pattern's gist, in order: any change to the library invalidates it.
    key: String,
    vectors: Vec<Vec<f32>>,
}

/// Read every `*.md` pattern in `dir` (not recursive), sorted by name; README.md is not a pattern.
pub fn read_dir(dir: &Path) -> Result<Vec<(String, String, PathBuf)>, ConstructError> {
    let io = |e| ConstructError::Io { path: dir.to_path_buf(), source: e };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".md")) else {
            continue;
        };
        if name.eq_ignore_ascii_case("readme") {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|e| ConstructError::Io { path: path.clone(), source: e })?;
        out.push((name.to_string(), text, path));
    }
    out.sort();
    Ok(out)
}

/// Lint `(name, text)` pairs: every problem of every file.
pub fn lint<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<LintProblem> {
    let mut out = Vec::new();
    for (name, text) in files {
        let (_, problems) = parse(name, text, Source::Shipped);
        out.extend(problems.into_iter().map(|p| LintProblem {
            file: format!("{name}.md"),
            field: p.field,
            message: p.message,
        }));
    }
    out
}

impl Library {
    /// The shipped patterns, plus the project's from `project_dir` when given (a missing directory
    /// is no error: the project has none). A project pattern with the name of a shipped one
    /// replaces it.
    pub fn load(project_dir: Option<&Path>) -> Result<Library, ConstructError> {
        let mut by_name: BTreeMap<String, Pattern> = BTreeMap::new();
        for (name, text) in SHIPPED {
            by_name.insert(name.to_string(), parse(name, text, Source::Shipped).0);
        }
        let mut problems = Vec::new();
        if let Some(dir) = project_dir.filter(|d| d.is_dir()) {
            for (name, text, path) in read_dir(dir)? {
                let (pattern, found) = parse(&name, &text, Source::Project { path });
                if found.is_empty() {
                    by_name.insert(name, pattern);
                } else {
                    problems.extend(found.into_iter().map(|p| LintProblem {
                        file: format!("{name}.md"),
                        field: p.field,
                        message: p.message,
                    }));
                }
            }
        }
        let patterns: Vec<Pattern> = by_name.into_values().collect();
        let mut lexical = Lexical::in_memory().map_err(|e| ConstructError::Index(e.to_string()))?;
        let docs: Vec<(RecordId, String)> = patterns.iter().map(|p| (RecordId([0; 32]), p.search_text())).collect();
        lexical.add(0, &docs).map_err(|e| ConstructError::Index(e.to_string()))?;
        Ok(Library { patterns, problems, lexical, vectors: None, vector_cache: None })
    }

    /// Keep pattern vectors in `path` between processes (a derived cache: a missing, stale or
    /// damaged file is recomputed and rewritten, and failing to write it is not an error).
    pub fn cache_vectors_in(&mut self, path: PathBuf) {
        self.vector_cache = Some(path);
    }

    fn gists_key(&self) -> String {
        let mut h = blake3::Hasher::new();
        for p in &self.patterns {
            h.update(p.gist().as_bytes());
            h.update(&[0]);
        }
        h.finalize().to_hex().to_string()
    }

    fn ensure_vectors(&mut self, e: &mut dyn Embedder) -> Result<(), ConstructError> {
        if self.vectors.as_ref().is_some_and(|(id, _)| id == e.model_id()) {
            return Ok(());
        }
        let key = self.gists_key();
        if let Some(path) = &self.vector_cache {
            let cached = std::fs::read(path).ok().and_then(|b| serde_json::from_slice::<VectorCache>(&b).ok());
            if let Some(c) =
                cached.filter(|c| c.model == e.model_id() && c.key == key && c.vectors.len() == self.patterns.len())
            {
                self.vectors = Some((c.model, c.vectors));
                return Ok(());
            }
        }
        let texts: Vec<String> = self.patterns.iter().map(Pattern::gist).collect();
        let vectors = e.embed(&texts)?;
        if let Some(path) = &self.vector_cache {
            let c = VectorCache { model: e.model_id().to_string(), key, vectors: vectors.clone() };
            if let (Some(dir), Ok(bytes)) = (path.parent(), serde_json::to_vec(&c)) {
                let tmp = path.with_extension("tmp");
                let _ = std::fs::create_dir_all(dir)
                    .and_then(|_| std::fs::write(&tmp, bytes))
                    .and_then(|_| std::fs::rename(&tmp, path));
            }
        }
        self.vectors = Some((e.model_id().to_string(), vectors));
        Ok(())
    }

    /// A pattern by name.
    pub fn get(&self, name: &str) -> Option<&Pattern> {
        self.patterns.iter().find(|p| p.name == name.trim().trim_end_matches(".md"))
    }

    /// The best `k` patterns for `query`: BM25 alone, or fused with cosine similarity when an
    /// embedder is given (the same relevance as recall). Vector-only matches need
    /// [`crate::rank::MIN_SIMILARITY`].
    pub fn search(
        &mut self,
        query: &str,
        k: usize,
        embedder: Option<&mut dyn Embedder>,
    ) -> Result<Vec<Hit>, ConstructError> {
        self.search_with(query, None, k, embedder)
    }

    /// [`Library::search`] with the query already embedded (model id, vector), as recall has it;
    /// used only when it comes from the same model as `embedder`.
    pub fn search_with(
        &mut self,
        query: &str,
        query_vector: Option<&(String, Vec<f32>)>,
        k: usize,
        embedder: Option<&mut dyn Embedder>,
    ) -> Result<Vec<Hit>, ConstructError> {
        let lexical =
            self.lexical.search(query, self.patterns.len()).map_err(|e| ConstructError::Index(e.to_string()))?;
        let best = lexical.first().map(|(_, s)| *s).unwrap_or(0.0);
        let mut bm25: Vec<Option<f32>> = vec![None; self.patterns.len()];
        for (key, score) in lexical {
            if let Some(slot) = bm25.get_mut(key as usize) {
                *slot = Some(score);
            }
        }
        let mut similarity: Vec<Option<f32>> = vec![None; self.patterns.len()];
        let semantic = embedder.is_some();
        if let Some(e) = embedder {
            self.ensure_vectors(e)?;
            let q = match query_vector.filter(|(model, _)| model == e.model_id()) {
                Some((_, v)) => v.clone(),
                None => e.embed(&[query.to_string()])?.pop().unwrap_or_default(),
            };
            if let Some((_, vectors)) = &self.vectors {
                for (slot, v) in similarity.iter_mut().zip(vectors) {
                    *slot = Some(cosine(&q, v));
                }
            }
        }
        let mut hits: Vec<Hit> = self
            .patterns
            .iter()
            .enumerate()
            .filter(|(i, _)| bm25[*i].is_some() || similarity[*i].is_some_and(|s| s >= crate::rank::MIN_SIMILARITY))
            .map(|(i, p)| Hit {
                name: p.name.clone(),
                title: p.title.clone(),
                intent: p.section("Intent").to_string(),
                tags: p.tags.clone(),
                score: crate::rank::relevance(bm25[i], best, similarity[i], semantic),
                similarity: similarity[i],
                bm25: bm25[i],
                source: p.source.clone(),
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.name.cmp(&b.name)));
        hits.truncate(k);
        Ok(hits)
    }
}

/// The hits recall shows, from a search's best-first hits: at most [`RECALL_PATTERNS`], each
/// scoring at least [`RECALL_MIN_SCORE`] and within [`RECALL_MARGIN`] of the best; without the
/// model (no similarity on the hits), at least [`RECALL_MIN_BM25`] and 90% of the best BM25.
pub fn for_recall(hits: Vec<Hit>) -> Vec<Hit> {
    let semantic = hits.iter().any(|h| h.similarity.is_some());
    let best = hits.iter().map(|h| h.score).fold(f64::MIN, f64::max);
    let best_bm25 = hits.iter().filter_map(|h| h.bm25).fold(0.0, f32::max);
    hits.into_iter()
        .filter(|h| match semantic {
            true => h.score >= RECALL_MIN_SCORE && h.score >= best - RECALL_MARGIN,
            false => h.bm25.is_some_and(|b| b >= RECALL_MIN_BM25 && b >= RECALL_BM25_SHARE * best_bm25),
        })
        .take(RECALL_PATTERNS)
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let n = a.iter().map(|x| x * x).sum::<f32>().sqrt() * b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        dot / n
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_pattern_passes_lint_and_the_list_matches_the_directory() {
        let problems = lint(SHIPPED.iter().map(|(n, t)| (*n, *t)));
        assert!(problems.is_empty(), "{problems:?}");
        assert!(SHIPPED.len() >= 12);
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("construct");
        let on_disk: Vec<String> = read_dir(&dir).expect("construct/").into_iter().map(|(n, _, _)| n).collect();
        let listed: Vec<String> = SHIPPED.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(on_disk, listed, "src/construct/shipped.rs must list every construct/*.md");
    }

    #[test]
    fn lint_names_every_problem() {
        let text = "---\ntitle: X\ntags: []\n---\n\n## Intent\n\nDo it.\n\n## Forces\n\n## Solution\n\nYes.\n";
        let problems = lint([("Bad_Name", text)]);
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, vec!["file", "author", "tags", "Forces", "Consequences", "References"], "{problems:?}");
        let long = format!("{}\n{}", SHIPPED[0].1, "x\n".repeat(MAX_LINES));
        assert!(lint([("long", long.as_str())]).iter().any(|p| p.field == "file" && p.message.contains("lines")));
        assert_eq!(lint([("none", "# just text\n")])[0].field, "front matter");
    }

    #[test]
    fn pattern_vectors_are_cached_between_processes_and_recomputed_when_stale() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("neo").join("construct-vectors.json");
        let mut e = crate::embed::HashEmbedder::new(64);
        let mut first = Library::load(None).expect("load");
        first.cache_vectors_in(path.clone());
        let hits = first.search("bisect a regression", 1, Some(&mut e)).expect("search");
        assert_eq!(hits[0].name, "bisect-a-regression");
        let mut cache: VectorCache = serde_json::from_slice(&std::fs::read(&path).expect("written")).expect("json");
        assert_eq!(cache.vectors.len(), SHIPPED.len());
        // A second library reads the cache instead of embedding: zeroed vectors prove it.
        for v in &mut cache.vectors {
            v.iter_mut().for_each(|x| *x = 0.0);
        }
        std::fs::write(&path, serde_json::to_vec(&cache).expect("json")).expect("write");
        let mut second = Library::load(None).expect("load");
        second.cache_vectors_in(path.clone());
        let hits = second.search("bisect a regression", 1, Some(&mut e)).expect("search");
        assert_eq!(hits[0].similarity, Some(0.0), "read from the cache");
        // A cache for another library (different key) is recomputed.
        cache.key = "other".into();
        std::fs::write(&path, serde_json::to_vec(&cache).expect("json")).expect("write");
        let mut third = Library::load(None).expect("load");
        third.cache_vectors_in(path);
        let hits = third.search("bisect a regression", 1, Some(&mut e)).expect("search");
        assert!(hits[0].similarity.is_some_and(|s| s > 0.1), "{hits:?}");
    }

    #[test]
    fn a_query_embedded_by_recall_gives_the_same_hits_and_another_models_vector_is_ignored() {
        let mut e = crate::embed::HashEmbedder::new(64);
        let mut lib = Library::load(None).expect("load");
        let q = "undo a database migration";
        let own = lib.search(q, 3, Some(&mut e)).expect("search");
        let v = (e.model_id().to_string(), e.embed(&[q.to_string()]).expect("embed").remove(0));
        let given = lib.search_with(q, Some(&v), 3, Some(&mut e)).expect("search");
        let names = |h: &[Hit]| h.iter().map(|h| (h.name.clone(), h.similarity)).collect::<Vec<_>>();
        assert_eq!(names(&own), names(&given));
        let foreign = ("another-model".to_string(), vec![0.0; 64]);
        let ignored = lib.search_with(q, Some(&foreign), 3, Some(&mut e)).expect("search");
        assert_eq!(names(&own), names(&ignored));
    }

    #[test]
    fn sections_hold_their_markdown() {
        let (p, problems) = parse(SHIPPED[0].0, SHIPPED[0].1, Source::Shipped);
        assert!(problems.is_empty());
        assert!(p.section("Solution").contains("git bisect run"), "{}", p.section("Solution"));
        assert!(!p.section("Intent").contains("## "));
    }
}
