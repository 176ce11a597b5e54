//! Ingest: documents of the repository recorded as `source` records (docs/format.md): the path,
//! the blob id and commit at ingest, the title, and the sections with their line ranges and a
//! hash of their text. Memory stores a pointer and the structure, not a copy: the text is the
//! blob already in the repository's history. Ingesting again notices a changed document by its
//! blob id and writes a new version that supersedes the old one (a moved document is followed by
//! its blob, a deleted one is marked outdated, never dropped); facts citing a section whose text
//! changed are then flagged for review by the fold.

use crate::api::memory::Memory;
use crate::api::write::WriteContext;
use crate::error::{Error, Result};
use crate::record::{Kind, LineRange, Payload, Record, RecordId, Section, Source, Supersession, SupersessionMethod};
use crate::store::ObjectId;
use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Documents a directory is searched for (a file named explicitly is taken whatever it is).
pub const DOCUMENT_EXTENSIONS: &[&str] = &["md", "markdown", "mdx", "txt", "rst", "adoc"];

/// What happened to one document.
#[derive(Clone, Debug, Serialize)]
pub struct Ingested {
    pub path: String,
    /// `new`, `changed`, `moved` or `deleted`.
    pub change: &'static str,
    /// The new source record (absent for a deleted document).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<RecordId>,
    /// The version it replaces or marks outdated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces: Option<RecordId>,
    /// For a move: where it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    pub sections: usize,
}

/// What `git neo ingest` did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IngestOutcome {
    pub documents: Vec<Ingested>,
    /// Documents already ingested at the same blob.
    pub unchanged: usize,
    /// Files left out (not UTF-8 text).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// Current facts citing a section that changed, and why (fold's review flags).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub needs_review: Vec<(RecordId, String)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// In a dry run, the plan that was not applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<super::plan::PlanView>,
}

/// The first 16 hex digits of BLAKE3 of a section's text (trailing blank lines ignored).
fn section_hash(text: &str) -> String {
    blake3::hash(text.trim_end().as_bytes()).to_hex()[..16].to_string()
}

/// A document's title and sections: a markdown document by its headings (the text before the
/// first heading, if any, is a section named by the title), any other text as one section.
pub fn sections(path: &str, text: &str) -> (String, Vec<Section>) {
    let stem = path.rsplit('/').next().unwrap_or(path).to_string();
    let line_of = |byte: usize| text[..byte.min(text.len())].matches('\n').count() as u32 + 1;
    let last_line = text.trim_end().lines().count().max(1) as u32;
    let is_markdown = ["md", "markdown", "mdx"].iter().any(|e| path.to_lowercase().ends_with(&format!(".{e}")));
    let lines: Vec<&str> = text.lines().collect();
    let text_of = |a: u32, b: u32| lines[(a as usize - 1).min(lines.len())..(b as usize).min(lines.len())].join("\n");
    if !is_markdown {
        let hash = section_hash(text);
        return (
            stem.clone(),
            vec![Section { heading: stem, level: 0, lines: LineRange { start: 1, end: last_line }, hash }],
        );
    }
    let mut heads: Vec<(u32, u8, String)> = Vec::new();
    let mut current: Option<(u32, u8, String)> = None;
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                let n = match level {
                    HeadingLevel::H1 => 1,
                    HeadingLevel::H2 => 2,
                    HeadingLevel::H3 => 3,
                    HeadingLevel::H4 => 4,
                    HeadingLevel::H5 => 5,
                    HeadingLevel::H6 => 6,
                };
                current = Some((line_of(range.start), n, String::new()));
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, _, h)) = current.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((line, level, h)) = current.take() {
                    heads.push((line, level, h.split_whitespace().collect::<Vec<_>>().join(" ")));
                }
            }
            // Documents written for a web page use HTML headings (`<h3 name=…>`).
            Event::Html(_) | Event::InlineHtml(_) if current.is_none() => {
                if let Some((level, heading)) = html_heading(&text[range.start..]) {
                    if heads.last().is_none_or(|(l, _, _)| *l != line_of(range.start)) {
                        heads.push((line_of(range.start), level, heading));
                    }
                }
            }
            _ => {}
        }
    }
    let title = heads.iter().find(|(_, l, h)| *l == 1 && !h.is_empty()).map(|(_, _, h)| h.clone()).unwrap_or(stem);
    let mut out = Vec::new();
    let first = heads.first().map_or(last_line + 1, |(l, _, _)| *l);
    if first > 1 && !text_of(1, first - 1).trim().is_empty() {
        let end = first - 1;
        out.push(Section {
            heading: title.clone(),
            level: 0,
            lines: LineRange { start: 1, end },
            hash: section_hash(&text_of(1, end)),
        });
    }
    for (i, (line, level, heading)) in heads.iter().enumerate() {
        let end = heads.get(i + 1).map_or(last_line, |(next, _, _)| next - 1).max(*line);
        let heading = if heading.is_empty() { format!("line {line}") } else { heading.clone() };
        // A long section is cut at paragraph boundaries: a cited part is then the part that says
        // it, not a thousand lines around it.
        for (n, (a, b)) in parts(&lines, *line, end).into_iter().enumerate() {
            out.push(Section {
                heading: if n == 0 { heading.clone() } else { format!("{heading} (part {})", n + 1) },
                level: *level,
                lines: LineRange { start: a, end: b },
                hash: section_hash(&text_of(a, b)),
            });
        }
    }
    (title, out)
}

/// The most bytes of text one section holds before it is cut at a paragraph boundary.
pub const MAX_SECTION_BYTES: usize = 6_000;

/// Lines `start..=end` (1-based) in parts of at most [`MAX_SECTION_BYTES`], each cut at the last
/// blank line that keeps it under the bound (a paragraph longer than the bound stays whole).
fn parts(lines: &[&str], start: u32, end: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let (mut from, mut bytes, mut cut) = (start, 0usize, None);
    for n in start..=end {
        let line = lines.get(n as usize - 1).copied().unwrap_or("");
        bytes += line.len() + 1;
        if bytes > MAX_SECTION_BYTES {
            if let Some(c) = cut.filter(|c| *c > from) {
                out.push((from, c));
                from = c + 1;
                bytes = (from..=n).map(|m| lines.get(m as usize - 1).map_or(1, |l| l.len() + 1)).sum();
                cut = None;
            }
        }
        if line.trim().is_empty() && n > from {
            cut = Some(n);
        }
    }
    out.push((from, end.max(from)));
    out
}

/// An HTML heading at the start of `html` (`<h1>`..`<h6>`, any attributes): its level and its
/// text with tags removed, when the closing tag follows within a few lines.
fn html_heading(html: &str) -> Option<(u8, String)> {
    let t = html.trim_start();
    let b = t.as_bytes();
    if b.len() < 4 || b[0] != b'<' || !b[1].eq_ignore_ascii_case(&b'h') || !(b'1'..=b'6').contains(&b[2]) {
        return None;
    }
    if !(b[3] == b'>' || b[3].is_ascii_whitespace()) {
        return None;
    }
    let level = b[2] - b'0';
    let open_end = t.find('>')?;
    let mut limit = t.len().min(open_end + 1 + 1_000);
    while !t.is_char_boundary(limit) {
        limit -= 1;
    }
    let window = &t[open_end + 1..limit];
    let close = window.to_ascii_lowercase().find(&format!("</h{level}"))?;
    let mut inner = String::new();
    let mut in_tag = false;
    for c in window[..close].chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => inner.push(c),
            _ => {}
        }
    }
    let heading = inner.split_whitespace().collect::<Vec<_>>().join(" ");
    (!heading.is_empty()).then_some((level, heading))
}

impl Memory {
    /// The current version of every ingested document, by path.
    pub fn sources(&self) -> BTreeMap<String, (RecordId, Source)> {
        self.state
            .source_ids()
            .iter()
            .filter_map(|id| self.state.entries.get(id))
            .filter(|e| e.status == crate::state::Status::Valid)
            .filter_map(|e| e.record.as_source().map(|s| (s.path.clone(), (e.id, s.clone()))))
            .collect()
    }

    /// Ingest the documents at HEAD under `targets` (repository-relative files or directories;
    /// an empty string is the whole repository), in one commit.
    pub fn ingest(&mut self, targets: &[String], ctx: &WriteContext) -> Result<IngestOutcome> {
        let head = self.store.head_commit()?.ok_or_else(|| {
            Error::invalid(
                "paths",
                "HEAD has no commit yet; commit the documents first (ingest reads them from history)",
            )
        })?;
        let short = head.to_string()[..12].to_string();
        let current = self.sources();
        let files = self.documents_at_head(targets, &current)?;
        let under = |path: &str| {
            targets
                .iter()
                .map(|t| t.trim_matches('/'))
                .any(|t| t.is_empty() || path == t || path.starts_with(&format!("{t}/")))
        };
        let mut out = IngestOutcome::default();
        let mut built: Vec<(String, Source)> = Vec::new();
        for (path, blob) in &files {
            if current.get(path).is_some_and(|(_, s)| *blob == s.blob.as_str()) {
                out.unchanged += 1;
                continue;
            }
            let bytes = self.store.read_blob(*blob)?;
            let Ok(text) = String::from_utf8(bytes) else {
                out.skipped.push(format!("{path}: not UTF-8 text"));
                continue;
            };
            let (title, sections) = sections(path, &text);
            built.push((
                path.clone(),
                Source { path: path.clone(), blob: blob.to_string(), commit: Some(head.to_string()), title, sections },
            ));
        }
        // Gone from HEAD: moved (a new path holds the same blob) or deleted.
        let gone: Vec<(&String, &(RecordId, Source))> =
            current.iter().filter(|(p, _)| under(p) && !files.contains_key(*p)).collect();
        let mut records: Vec<Record> = Vec::new();
        let mut claimed: BTreeSet<String> = BTreeSet::new();
        let record = |payload: Payload, kind: Kind| Record {
            kind,
            payload,
            author: ctx.identity.author_field(),
            created_at: ctx.now,
            body: String::new(),
        };
        let supersede = |old: RecordId, new: Option<RecordId>, reason: String| {
            record(
                Payload::Supersession(Supersession {
                    old,
                    old_scope: None,
                    new,
                    reason,
                    method: if new.is_some() { SupersessionMethod::Document } else { SupersessionMethod::Outdated },
                    score: None,
                }),
                Kind::Supersession,
            )
        };
        for (path, source) in &built {
            let n = source.sections.len();
            let rec = record(Payload::Source(source.clone()), Kind::Source);
            let (id, _) = rec.encode();
            records.push(rec);
            let (change, replaces, from) = match current.get(path) {
                Some((old, _)) => {
                    records.push(supersede(*old, Some(id), format!("{path} changed at {short}")));
                    ("changed", Some(*old), None)
                }
                None => match gone.iter().find(|(p, (_, s))| s.blob == source.blob && !claimed.contains(*p)) {
                    Some((old_path, (old, _))) => {
                        claimed.insert((*old_path).clone());
                        records.push(supersede(*old, Some(id), format!("moved from {old_path} to {path} at {short}")));
                        ("moved", Some(*old), Some((*old_path).clone()))
                    }
                    None => ("new", None, None),
                },
            };
            out.documents.push(Ingested { path: path.clone(), change, id: Some(id), replaces, from, sections: n });
        }
        for (path, (old, _)) in gone.iter().filter(|(p, _)| !claimed.contains(*p)) {
            records.push(supersede(*old, None, format!("{path} was deleted from the repository at {short}")));
            out.documents.push(Ingested {
                path: (*path).clone(),
                change: "deleted",
                id: None,
                replaces: Some(*old),
                from: None,
                sections: 0,
            });
        }
        if records.is_empty() {
            return Ok(out);
        }
        let n = out.documents.len();
        let message = format!("neo: ingest {n} document{}", if n == 1 { "" } else { "s" });
        let written = self.write_all(records, message, ctx)?;
        out.commit = written.commit;
        if written.plan.is_some() {
            out.plan = written.plan;
            return Ok(out);
        }
        out.needs_review = self.flagged_by(&out.documents);
        Ok(out)
    }

    /// The documents under `targets` in HEAD's tree (a path named outright whatever its
    /// extension), by path; a target that names nothing in HEAD, nor an ingested document, is an
    /// error.
    fn documents_at_head(
        &self,
        targets: &[String],
        current: &BTreeMap<String, (RecordId, Source)>,
    ) -> Result<BTreeMap<String, ObjectId>> {
        let mut files: BTreeMap<String, ObjectId> = BTreeMap::new();
        for t in targets {
            let t = t.trim_matches('/');
            let found = self.store.files_at_head(t)?;
            let explicit = found.iter().any(|(p, _)| p == t);
            let known = current.keys().any(|p| t.is_empty() || p == t || p.starts_with(&format!("{t}/")));
            if found.is_empty() && !known {
                return Err(Error::invalid(
                    "paths",
                    format!("{t:?} is not in HEAD's tree; ingest reads committed documents, so commit it first"),
                ));
            }
            for (p, blob) in found {
                let ext = p.rsplit_once('.').map(|(_, e)| e.to_lowercase()).unwrap_or_default();
                if explicit || DOCUMENT_EXTENSIONS.contains(&ext.as_str()) {
                    files.insert(p, blob);
                }
            }
        }
        Ok(files)
    }

    /// The current facts a new version of `documents` flagged for review, with why.
    fn flagged_by(&self, documents: &[Ingested]) -> Vec<(RecordId, String)> {
        let replaced: BTreeSet<RecordId> = documents.iter().filter_map(|d| d.replaces).collect();
        let mut out = Vec::new();
        for e in self.state.iter().filter(|e| e.status == crate::state::Status::Valid) {
            for flag in &e.needs_review {
                if let crate::state::ReviewFlag::SourceChanged { id, .. } = flag {
                    if replaced.contains(id) || self.cites_chain_touches(*id, &replaced) {
                        out.push((e.id, flag.to_string()));
                    }
                }
            }
        }
        out
    }

    /// Whether the versions after `id` include one of `replaced` (a citation of an older version
    /// is flagged by a change to a newer one).
    fn cites_chain_touches(&self, id: RecordId, replaced: &BTreeSet<RecordId>) -> bool {
        let mut cur = id;
        for _ in 0..256 {
            if replaced.contains(&cur) {
                return true;
            }
            let Some(next) = self.state.entries.get(&cur).and_then(|e| e.superseded_by.last().copied()) else {
                return false;
            };
            cur = next;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headings(path: &str, text: &str) -> Vec<(String, u8, u32, u32)> {
        sections(path, text).1.into_iter().map(|s| (s.heading, s.level, s.lines.start, s.lines.end)).collect()
    }

    #[test]
    fn html_and_setext_headings_are_sections() {
        let doc = "# FAQ\n\n* [Compressed files](#search-compressed)\n* [Look-around](#look-around)\n\n\
                   <h3 name=\"search-compressed\">\nHow do I search compressed files?\n</h3>\n\nUse -z.\n\n\
                   <h3 name=\"look-around\">How do I enable <code>look-around</code>?</h3>\n\nUse -P.\n\n\
                   Setext heading\n--------------\n\nText.\n";
        assert_eq!(
            headings("FAQ.md", doc),
            vec![
                ("FAQ".to_string(), 1, 1, 5),
                ("How do I search compressed files?".to_string(), 3, 6, 11),
                ("How do I enable look-around?".to_string(), 3, 12, 15),
                ("Setext heading".to_string(), 2, 16, 19),
            ]
        );
        // Not headings: other tags, a heading tag never closed.
        assert_eq!(html_heading("<hr>"), None);
        assert_eq!(html_heading("<header>x</header>"), None);
        assert_eq!(html_heading("<h2>never closed"), None);
        assert_eq!(html_heading("<H2 id=x>Caps</H2>"), Some((2, "Caps".to_string())));
    }

    #[test]
    fn long_sections_are_cut_at_paragraph_boundaries() {
        let para = "word ".repeat(200); // 1,000 bytes
        let mut doc = String::from("# Big\n\n");
        for _ in 0..15 {
            doc.push_str(&para);
            doc.push_str("\n\n");
        }
        let got = headings("big.md", &doc);
        assert!(got.len() >= 3, "{got:?}");
        assert_eq!(got[0].0, "Big");
        assert_eq!(got[1].0, "Big (part 2)");
        // Parts tile the section without gaps, each under the bound, each ending at a paragraph.
        for w in got.windows(2) {
            assert_eq!(w[1].2, w[0].3 + 1, "{got:?}");
        }
        let lines: Vec<&str> = doc.lines().collect();
        for (_, _, a, b) in &got {
            let bytes: usize = (*a..=*b).map(|n| lines.get(n as usize - 1).map_or(0, |l| l.len() + 1)).sum();
            assert!(bytes <= MAX_SECTION_BYTES, "{bytes}");
        }
    }
}
