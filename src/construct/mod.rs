//! The Construct: curated, attributed patterns about working on code with git and with agents.
//! What git-neo was taught, as opposed to the project memory, which holds what a project learned.
//!
//! This module owns the pattern format (front matter with `title`, `author`, `tags`; the sections
//! Intent, Forces, Solution, Consequences, References; under [`MAX_LINES`] lines), its parser
//! (pulldown-cmark for the markdown, serde_yaml for the front matter), the linter, and the
//! library: the shipped patterns plus a project's own, searchable like recall (BM25 through an
//! in-memory tantivy index, fused with vector similarity when an embedder is given). No I/O
//! except reading a project's pattern directory, which the caller names.

mod search;
mod shipped;

pub use search::{for_recall, Hit, Library, RECALL_MARGIN, RECALL_MIN_BM25, RECALL_MIN_SCORE};
pub use shipped::SHIPPED;

use crate::record::Problem;
use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The sections every pattern has, in order.
pub const SECTIONS: [&str; 5] = ["Intent", "Forces", "Solution", "Consequences", "References"];

/// Patterns recall shows at most, after the project's own memory.
pub const RECALL_PATTERNS: usize = 3;

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
    fn sections_hold_their_markdown() {
        let (p, problems) = parse(SHIPPED[0].0, SHIPPED[0].1, Source::Shipped);
        assert!(problems.is_empty());
        assert!(p.section("Solution").contains("git bisect run"), "{}", p.section("Solution"));
        assert!(!p.section("Intent").contains("## "));
    }
}
