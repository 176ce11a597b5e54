//! Semantic validation shared by the writer and the reader: every problem at once, each naming its field.
//!
//! The writer validates a [`Record`] before computing its bytes; the parser validates what it
//! decoded. Both call [`validate`], so a record the writer accepts is one the verifier accepts.

use super::{Anchor, Attempt, Fact, Lesson, Payload, Record, Source, Timestamp};
use serde::Serialize;
use std::fmt;

/// Largest body accepted, in bytes. Memory is read by agents within token budgets: a record is a
/// note, not a document dump.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// Longest subject, in characters.
pub const MAX_SUBJECT_CHARS: usize = 200;
/// Longest one-line field other than the subject (scope, key, author, reason, task, …), in characters.
pub const MAX_LINE_CHARS: usize = 1000;
/// Longest multi-line front-matter text (observation, inference, action), in bytes.
pub const MAX_TEXT_BYTES: usize = 16 * 1024;
/// Most tags on one record, and the longest tag.
pub const MAX_TAGS: usize = 32;
pub const MAX_TAG_CHARS: usize = 64;
/// Most anchors or files on one record.
pub const MAX_ANCHORS: usize = 64;
/// Most sections of one ingested document.
pub const MAX_SECTIONS: usize = 2000;

/// `text` on one line as a subject: whole when it fits [`MAX_SUBJECT_CHARS`], else cut at a word
/// with `…`; true when it was cut (the whole text then belongs in the body).
pub fn fit_subject(text: &str) -> (String, bool) {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= MAX_SUBJECT_CHARS {
        return (one, false);
    }
    let cut: String = one.chars().take(MAX_SUBJECT_CHARS - 1).collect();
    let at = cut.rfind(' ').filter(|i| *i > MAX_SUBJECT_CHARS / 2).unwrap_or(cut.len());
    (format!("{}…", cut[..at].trim_end()), true)
}

/// `text` as a tag: lowercased, characters outside `a-z 0-9 - _ . / :` made `-`, at most
/// [`MAX_TAG_CHARS`]; `None` when nothing is left.
pub fn tag_of(text: &str) -> Option<String> {
    let tag: String = text
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() || "-_./:".contains(c) { c } else { '-' })
        .take(MAX_TAG_CHARS)
        .collect();
    let tag = tag.trim_matches('-').to_string();
    (!tag.is_empty()).then_some(tag)
}

/// One thing wrong with a record or a request, naming the field it is about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The field, as named in front matter (`subject`, `anchors[0].path`, `file` for the whole file).
    pub field: String,
    /// What is wrong and how to fix it, in the library's own terms.
    pub message: String,
    /// What to run on the command line to fix it (`git neo revert …`, `--all`): the CLI shows
    /// it after the message, a front end with other verbs (MCP) leaves it out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Problem {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem { field: field.into(), message: message.into(), hint: None }
    }

    /// This problem with the command-line advice `hint`.
    pub fn with_hint(self, hint: impl Into<String>) -> Problem {
        Problem { hint: Some(hint.into()), ..self }
    }

    /// The field and message without the command-line advice.
    pub fn plain(&self) -> String {
        format!("{}: {}", self.field, self.message)
    }
}

/// The field, the message and the command-line advice: what the CLI shows.
impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)?;
        match &self.hint {
            Some(h) => write!(f, "; {h}"),
            None => Ok(()),
        }
    }
}

/// A non-empty list of problems, displayed one per line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Problems(pub Vec<Problem>);

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// Characters that never belong in a record's text: control characters (other than the line
/// breaks and tabs that multi-line fields allow), line/paragraph separators, and every Unicode
/// format character (category Cf: zero-width spaces and joiners, the soft hyphen, the byte-order
/// mark, bidirectional controls, tag characters). A format character draws nothing, so a
/// terminal or a pull-request diff would show a reviewer less than the agent reads.
fn forbidden_char(c: char, multiline: bool) -> bool {
    if multiline && (c == '\n' || c == '\t') {
        return false;
    }
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') || is_format_char(c)
}

/// The first character of `value` no record stores (see [`forbidden_char`]), besides those
/// `allowed` (the body also keeps carriage returns, which canonical bytes drop); plain ASCII text
/// is checked byte by byte.
fn first_forbidden(value: &str, multiline: bool, allowed: &[char]) -> Option<char> {
    if value.is_ascii() {
        return value
            .bytes()
            .find(|&b| {
                ((b < 0x20 && !(multiline && (b == b'\n' || b == b'\t'))) || b == 0x7f)
                    && !allowed.contains(&char::from(b))
            })
            .map(char::from);
    }
    value.chars().find(|&c| forbidden_char(c, multiline) && !allowed.contains(&c))
}

/// Whether `c` is a Unicode format character (general category Cf, Unicode 15.1): invisible
/// characters that change how text around them is shaped, joined or ordered, or that carry hidden
/// data (tag characters U+E0000 to U+E007F).
pub fn is_format_char(c: char) -> bool {
    // Every format character is at or above the soft hyphen: plain text leaves at once.
    if c < '\u{ad}' {
        return false;
    }
    matches!(
        c,
        '\u{ad}'
            | '\u{600}'..='\u{605}'
            | '\u{61c}'
            | '\u{6dd}'
            | '\u{70f}'
            | '\u{890}'..='\u{891}'
            | '\u{8e2}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{110bd}'
            | '\u{110cd}'
            | '\u{13430}'..='\u{1343f}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0001}'
            | '\u{e0020}'..='\u{e007f}'
    )
}

fn describe(c: char) -> String {
    match c {
        '\n' => "a line break".into(),
        '\r' => "a carriage return".into(),
        '\t' => "a tab".into(),
        c => format!("the character U+{:04X}", c as u32),
    }
}

/// Check a one-line text field: present, trimmed, no forbidden characters, bounded.
pub fn check_line(problems: &mut Vec<Problem>, field: &str, value: &str, max_chars: usize, what: &str) {
    if value.trim().is_empty() {
        problems.push(Problem::new(field, format!("is empty; give {what}")));
        return;
    }
    if let Some(c) = first_forbidden(value, false, &[]) {
        problems.push(Problem::new(field, format!("contains {}; it must be a single line of plain text", describe(c))));
    }
    if value.trim() != value {
        problems.push(Problem::new(field, "has leading or trailing whitespace; trim it"));
    }
    let n = value.chars().count();
    if n > max_chars {
        problems.push(Problem::new(field, format!("is {n} characters long; the limit is {max_chars}, shorten it")));
    }
}

/// Check a multi-line text field (line breaks and tabs allowed).
pub fn check_text(problems: &mut Vec<Problem>, field: &str, value: &str, max_bytes: usize, what: &str) {
    if value.trim().is_empty() {
        problems.push(Problem::new(field, format!("is empty; give {what}")));
        return;
    }
    if let Some(c) = first_forbidden(value, true, &[]) {
        problems.push(Problem::new(field, format!("contains {}, which records do not store; remove it", describe(c))));
    }
    if value.len() > max_bytes {
        problems.push(Problem::new(field, format!("is {} bytes; the limit is {max_bytes}, shorten it", value.len())));
    }
}

fn check_tags(problems: &mut Vec<Problem>, tags: &[String]) {
    if tags.len() > MAX_TAGS {
        problems.push(Problem::new("tags", format!("has {} tags; the limit is {MAX_TAGS}", tags.len())));
    }
    for (i, t) in tags.iter().enumerate() {
        let field = format!("tags[{i}]");
        if t.is_empty() || t.chars().count() > MAX_TAG_CHARS {
            problems.push(Problem::new(&field, format!("must be 1 to {MAX_TAG_CHARS} characters")));
        } else if !t.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_./:".contains(c)) {
            problems.push(Problem::new(
                &field,
                format!("{t:?} has characters outside a-z, 0-9 and - _ . / :; use a lowercase word like \"payments\""),
            ));
        }
    }
    let mut sorted = tags.to_vec();
    sorted.sort();
    sorted.dedup();
    if sorted.len() != tags.len() || sorted != tags {
        problems.push(Problem::new("tags", "must be sorted and without duplicates"));
    }
}

/// Check a repository-relative path: not absolute, no `..`, no empty or `.` components.
pub fn check_repo_path(problems: &mut Vec<Problem>, field: &str, path: &str) {
    if path.is_empty() {
        problems.push(Problem::new(field, "is empty; give a path relative to the repository root"));
        return;
    }
    if path.starts_with('/') || path.contains('\\') || (path.len() > 1 && path.as_bytes()[1] == b':') {
        problems.push(Problem::new(
            field,
            format!("{path:?} is absolute; give a path relative to the repository root, with / separators"),
        ));
        return;
    }
    if path.split('/').any(|c| c == "..") {
        problems.push(Problem::new(field, format!("{path:?} escapes the repository; give a path inside it")));
        return;
    }
    if path.split('/').any(|c| c.is_empty() || c == ".") {
        problems.push(Problem::new(field, format!("{path:?} is not normalised; remove empty and '.' components")));
    }
    if first_forbidden(path, false, &[]).is_some() {
        problems.push(Problem::new(field, "contains a control character; give a plain path"));
    }
}

fn check_anchor(problems: &mut Vec<Problem>, i: usize, a: &Anchor) {
    check_repo_path(problems, &format!("anchors[{i}].path"), &a.path);
    if let Some(lines) = a.lines {
        if lines.start == 0 || lines.end < lines.start {
            problems.push(Problem::new(
                format!("anchors[{i}].lines"),
                format!("{lines} is not a range; lines are 1-based and START <= END, as in src/x.rs:10-20"),
            ));
        }
    }
    for (name, value) in [("blob", &a.blob), ("commit", &a.commit)] {
        if let Some(v) = value {
            if !(v.len() == 40 || v.len() == 64) || !super::id::is_lower_hex(v) {
                problems
                    .push(Problem::new(format!("anchors[{i}].{name}"), "must be a full lowercase hex git object id"));
            }
        }
    }
}

/// Check the body: bounded, no front-matter fence lines, no forbidden characters.
pub fn check_body(problems: &mut Vec<Problem>, body: &str) {
    if body.len() > MAX_BODY_BYTES {
        problems.push(Problem::new(
            "body",
            format!(
                "is {} bytes; the limit is {MAX_BODY_BYTES}, keep a record to a note and link to documents instead",
                body.len()
            ),
        ));
    }
    if let Some((n, _)) = body.split('\n').enumerate().find(|(_, l)| l.trim_end() == "---") {
        problems.push(Problem::new(
            "body",
            format!("line {} is a front-matter fence (---); use *** or ___ for a horizontal rule", n + 1),
        ));
    }
    if let Some(c) = first_forbidden(body, true, &['\r']) {
        problems.push(Problem::new("body", format!("contains {}, which records do not store; remove it", describe(c))));
    }
}

/// A fact's own rules: one-line fields, tags, confidence and window, suggestion, anchors, citations.
fn check_fact(p: &mut Vec<Problem>, f: &Fact) {
    check_line(p, "subject", &f.subject, MAX_SUBJECT_CHARS, "a one-line summary of the fact");
    check_line(p, "scope", &f.scope, MAX_LINE_CHARS, "the part of the project this is about, or \"project\"");
    check_tags(p, &f.tags);
    if let Some(k) = &f.key {
        check_line(p, "key", k, MAX_LINE_CHARS, "a subject and predicate such as \"deploy target\"");
    }
    if !(0..=1000).contains(&f.confidence.0) {
        p.push(Problem::new("confidence", format!("{} is outside 0.0 to 1.0", f.confidence)));
    }
    if let (Some(from), Some(to)) = (f.valid_from, f.valid_to) {
        if from > to {
            p.push(Problem::new("valid_to", format!("{to} is before valid_from {from}")));
        }
    }
    if let Some(s) = &f.suggestion {
        check_text(p, "suggestion", s, MAX_TEXT_BYTES, "the code the fact recommends, or leave it out");
    }
    if f.anchors.len() > MAX_ANCHORS {
        p.push(Problem::new("anchors", format!("has {} anchors; the limit is {MAX_ANCHORS}", f.anchors.len())));
    }
    for (i, a) in f.anchors.iter().enumerate() {
        check_anchor(p, i, a);
    }
    if f.cites.len() > MAX_ANCHORS {
        p.push(Problem::new("cites", format!("has {} citations; the limit is {MAX_ANCHORS}", f.cites.len())));
    }
    for (i, c) in f.cites.iter().enumerate() {
        check_line(p, &format!("cites[{i}].section"), &c.section, MAX_LINE_CHARS, "a heading of the document");
    }
}

/// A source's own rules: its path, title, object ids and sections.
fn check_source(p: &mut Vec<Problem>, s: &Source) {
    check_repo_path(p, "path", &s.path);
    check_line(p, "title", &s.title, MAX_LINE_CHARS, "the document's title");
    for (name, value) in [("blob", Some(&s.blob)), ("commit", s.commit.as_ref())] {
        if let Some(v) = value {
            if !(v.len() == 40 || v.len() == 64) || !super::id::is_lower_hex(v) {
                p.push(Problem::new(name, "must be a full lowercase hex git object id"));
            }
        }
    }
    if s.sections.len() > MAX_SECTIONS {
        p.push(Problem::new("sections", format!("has {} sections; the limit is {MAX_SECTIONS}", s.sections.len())));
    }
    for (i, sec) in s.sections.iter().enumerate() {
        check_line(p, &format!("sections[{i}].heading"), &sec.heading, MAX_LINE_CHARS, "the heading's text");
        if sec.level > 6 {
            p.push(Problem::new(format!("sections[{i}].level"), "is a heading level from 0 to 6"));
        }
        if sec.lines.start == 0 || sec.lines.end < sec.lines.start {
            p.push(Problem::new(format!("sections[{i}].lines"), format!("{} is not a range", sec.lines)));
        }
        if sec.hash.len() != 16 || !super::id::is_lower_hex(&sec.hash) {
            p.push(Problem::new(format!("sections[{i}].hash"), "must be 16 lowercase hex digits"));
        }
    }
}

/// An attempt's own rules: its texts, check, files and tags.
fn check_attempt(p: &mut Vec<Problem>, a: &Attempt) {
    check_line(p, "task", &a.task, MAX_LINE_CHARS, "the task id this attempt belongs to");
    check_text(p, "action", &a.action, MAX_TEXT_BYTES, "what was tried");
    check_text(p, "observation", &a.observation, MAX_TEXT_BYTES, "what was observed");
    if let Some(inf) = &a.inference {
        check_text(p, "inference", inf, MAX_TEXT_BYTES, "what was inferred, or leave it out");
    }
    if let Some(s) = &a.suggestion {
        check_text(p, "suggestion", s, MAX_TEXT_BYTES, "the code the attempt proposes, or leave it out");
    }
    if let Some(cmd) = &a.check.command {
        check_text(p, "check.command", cmd, MAX_TEXT_BYTES, "the command that ran");
    }
    if a.files.len() > MAX_ANCHORS {
        p.push(Problem::new("files", format!("has {} files; the limit is {MAX_ANCHORS}", a.files.len())));
    }
    if let Some(out) = &a.check.output {
        if out.len() > MAX_TEXT_BYTES {
            p.push(Problem::new("check.output", format!("is {} bytes; the limit is {MAX_TEXT_BYTES}", out.len())));
        }
        if let Some(c) = first_forbidden(out, true, &[]) {
            p.push(Problem::new("check.output", format!("contains {}, which records do not store", describe(c))));
        }
    }
    for (i, f) in a.files.iter().enumerate() {
        check_repo_path(p, &format!("files[{i}].path"), &f.path);
        if let Some(b) = &f.blob {
            if !(b.len() == 40 || b.len() == 64) || !super::id::is_lower_hex(b) {
                p.push(Problem::new(format!("files[{i}].blob"), "must be a full lowercase hex git object id"));
            }
        }
    }
    check_line(p, "scope", &a.scope, MAX_LINE_CHARS, "the part of the project this is about, or \"project\"");
    check_tags(p, &a.tags);
}

/// A lesson's own rules as a record (its consistency as a patch is `crate::lesson::check`).
fn check_lesson(p: &mut Vec<Problem>, l: &Lesson) {
    // The patch's own consistency (hashes, diff, allowed target) is `crate::lesson::check`,
    // which `verify` and `lesson apply` run; here only what every record must be.
    check_repo_path(p, "file", &l.file);
    for (name, v) in [("before", &l.before), ("after", &l.after)] {
        if v.len() != 64 || !super::id::is_lower_hex(v) {
            p.push(Problem::new(name, "must be a BLAKE3 hash: 64 lowercase hex digits"));
        }
    }
    if let Some(c) = first_forbidden(&l.original, true, &[]) {
        p.push(Problem::new("original", format!("contains {}, which records do not store", describe(c))));
    }
    if l.original.len() > MAX_BODY_BYTES {
        p.push(Problem::new("original", format!("is {} bytes; the limit is {MAX_BODY_BYTES}", l.original.len())));
    }
    if l.because.len() > MAX_ANCHORS {
        p.push(Problem::new("because", format!("names {} records; the limit is {MAX_ANCHORS}", l.because.len())));
    }
    check_line(p, "reason", &l.reason, MAX_LINE_CHARS, "what the lesson says and why");
}

/// Every semantic problem with `record`, in field order. Empty means valid.
pub fn validate(record: &Record) -> Vec<Problem> {
    let mut p = Vec::new();
    match &record.payload {
        Payload::Fact(f) => check_fact(&mut p, f),
        Payload::Source(s) => check_source(&mut p, s),
        Payload::Attempt(a) => check_attempt(&mut p, a),
        Payload::Supersession(s) => {
            check_line(&mut p, "reason", &s.reason, MAX_LINE_CHARS, "why the old record no longer holds");
            if let Some(scope) = &s.old_scope {
                let named = matches!(scope.as_str(), "project" | "user" | "org")
                    || scope.strip_prefix("session:").is_some_and(|n| !n.is_empty());
                if !named {
                    p.push(Problem::new(
                        "old_scope",
                        format!("{scope:?} is not a scope; use project, user, org or session:<name>"),
                    ));
                }
            }
            if s.new == Some(s.old) {
                p.push(Problem::new("new", "names the same record as old; a record cannot supersede itself"));
            }
            if let Some(score) = s.score {
                if !(0..=1000).contains(&score.0) {
                    p.push(Problem::new("score", format!("{score} is outside 0.0 to 1.0")));
                }
            }
        }
        Payload::Outcome(o) => {
            check_line(&mut p, "signal", &o.signal, MAX_LINE_CHARS, "the signal observed, such as \"accepted\"");
            check_line(&mut p, "key", &o.key, MAX_LINE_CHARS, "an idempotency key (target, commit, signal)");
            if !(-1000..=1000).contains(&o.delta.0) {
                p.push(Problem::new("delta", format!("{} is outside -1.0 to 1.0", o.delta)));
            }
            for (i, path) in o.paths.iter().enumerate() {
                check_repo_path(&mut p, &format!("paths[{i}]"), path);
            }
        }
        Payload::Retraction(r) => {
            check_line(&mut p, "reason", &r.reason, MAX_LINE_CHARS, "why the record should be forgotten");
        }
        Payload::Lesson(l) => check_lesson(&mut p, l),
    }
    check_line(&mut p, "author", &record.author, MAX_LINE_CHARS, "who wrote the record, as \"Name <email>\"");
    if !record.created_at.in_range() {
        p.push(Problem::new("created_at", "is outside the years 0000 to 9999"));
    }
    check_body(&mut p, &record.body);
    p
}

/// How far ahead of the reading clock a record's `created_at` may be: clocks disagree by
/// minutes, not by a day.
pub const MAX_CLOCK_SKEW_SECS: i64 = 24 * 60 * 60;

/// A problem when `created_at` is more than [`MAX_CLOCK_SKEW_SECS`] after `now` (a record dated in
/// the future would pass as the latest word on its subject).
pub fn check_not_future(created_at: Timestamp, now: Timestamp) -> Option<Problem> {
    (created_at.0 > now.0.saturating_add(MAX_CLOCK_SKEW_SECS)).then(|| {
        Problem::new(
            "created_at",
            format!(
                "is {created_at}, more than a day after now ({now}); a record is dated when it is written: fix the writer's clock"
            ),
        )
    })
}
