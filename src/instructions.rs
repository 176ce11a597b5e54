//! PURE. Agent instruction files read into facts: `AGENTS.md`, `CLAUDE.md`, Cursor's
//! `.cursor/rules/*.mdc`, `.github/copilot-instructions.md` and a `MEMORY.md`. One fact per
//! top-level bullet or paragraph, typed by its wording and the headings above it (the rules are
//! [`type_of`], documented in docs/import.md), with the lines it came from. The section git-neo's
//! own `setup` writes into these files is skipped: it is instructions about git-neo, not the
//! project's knowledge.

use crate::record::FactType;
use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};

/// The formats `git neo import --from` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    AgentsMd,
    ClaudeMd,
    CursorRules,
    Copilot,
    MemoryMd,
}

impl Format {
    /// `agents-md`, `claude-md`, `cursor-rules`, `copilot`, `memory-md`.
    pub fn from_word(s: &str) -> Option<Format> {
        Some(match s {
            "agents-md" => Format::AgentsMd,
            "claude-md" => Format::ClaudeMd,
            "cursor-rules" => Format::CursorRules,
            "copilot" => Format::Copilot,
            "memory-md" => Format::MemoryMd,
            _ => return None,
        })
    }

    pub fn word(self) -> &'static str {
        match self {
            Format::AgentsMd => "agents-md",
            Format::ClaudeMd => "claude-md",
            Format::CursorRules => "cursor-rules",
            Format::Copilot => "copilot",
            Format::MemoryMd => "memory-md",
        }
    }
}

/// A fact read from an instruction file, before it is a write request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub fact_type: FactType,
    /// The first line of the item, markdown emphasis removed, at most 200 characters.
    pub subject: String,
    /// The whole item when it is more than its subject (continuation lines, nested bullets, the
    /// code block that follows it), else empty.
    pub body: String,
    /// First and last line in the file, 1-based, inclusive.
    pub lines: (u32, u32),
    /// The headings above it, outermost first.
    pub section: Vec<String>,
    /// Why it has its type: `wording: …`, `heading: …`, or `default`.
    pub why: String,
}

/// Words that open a rule: a bullet starting with one is a constraint whatever its heading.
const RULE_OPENINGS: &[&str] =
    &["never", "always", "do not", "don't", "dont", "must", "must not", "avoid", "only", "no ", "under no"];

/// Words that make a statement a rule wherever they stand (`Migrations must be reversible`).
const RULE_WORDS: &[&str] = &[" must ", " must not ", " never ", " may not ", " is not allowed", " are not allowed"];

/// Heading words and the type they give the items under them, checked in this order.
const HEADING_TYPES: &[(&[&str], FactType)] = &[
    (&["open question", "question", "unknown", "todo", "tbd"], FactType::KnownUnknown),
    (&["gotcha", "pitfall", "known issue", "troubleshoot", "failure", "lesson", "mistake", "bug"], FactType::Failure),
    (&["decision", "adr", "chose", "choice"], FactType::Decision),
    (
        &["architecture", "structure", "layout", "overview", "design", "component", "stack", "module", "directory"],
        FactType::Architecture,
    ),
    (&["review"], FactType::Review),
    (
        &["rule", "constraint", "requirement", "security", "safety", "don't", "do not", "never", "must"],
        FactType::Constraint,
    ),
];

/// The type of an item from its text and the headings above it (innermost heading first):
/// 1. wording: an item that opens like a rule (`Never …`, `Always …`, `Do not …`, `Must …`,
///    `Avoid …`, `Only …`) or says `must`, `never`, `may not` is a constraint; one that asks (ends with `?`, or opens with `TODO`,
///    `Unknown`, `Unclear`) is a known unknown;
/// 2. else the innermost heading that names a kind (`HEADING_TYPES`);
/// 3. else a pattern (a convention of the project).
pub fn type_of(text: &str, section: &[String]) -> (FactType, String) {
    // A leading label (`Cargo: never run …`, `TODOs: do not …`) names the topic; the wording
    // that decides comes after it.
    let whole = text.trim().to_lowercase();
    let text = match text.split_once(": ") {
        Some((label, rest)) if label.split_whitespace().count() <= 3 && !label.contains('`') => rest,
        _ => text,
    };
    let lower = text.trim().to_lowercase();
    if let Some(w) = RULE_OPENINGS.iter().find(|w| lower.starts_with(**w)) {
        return (FactType::Constraint, format!("wording: opens with {:?}", w.trim()));
    }
    if let Some(w) = RULE_WORDS.iter().find(|w| lower.contains(**w)) {
        return (FactType::Constraint, format!("wording: says {:?}", w.trim()));
    }
    if whole.ends_with('?') || ["todo", "unknown", "unclear", "open question"].iter().any(|w| whole.starts_with(w)) {
        return (FactType::KnownUnknown, "wording: a question".into());
    }
    for h in section.iter().rev() {
        let hl = h.to_lowercase();
        for (words, t) in HEADING_TYPES {
            if let Some(w) = words.iter().find(|w| hl.contains(**w)) {
                return (*t, format!("heading: {h:?} ({w})"));
            }
        }
    }
    (FactType::Pattern, "default".into())
}

/// Text without markdown emphasis and list markers, on one line.
fn plain(s: &str) -> String {
    let s = s.trim_start();
    let s = s
        .strip_prefix("- [ ] ")
        .or_else(|| s.strip_prefix("- [x] "))
        .or_else(|| s.strip_prefix("- "))
        .or_else(|| s.strip_prefix("* "))
        .or_else(|| s.strip_prefix("+ "))
        .unwrap_or(s);
    let s = match s.split_once(". ") {
        Some((n, rest)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => rest,
        _ => s,
    };
    s.replace("**", "").replace("__", "").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A subject: the first sentence of the first paragraph (when the paragraph has more), cut at a
/// word to fit a subject; true when it is less than the paragraph.
fn subject_of(first: &str) -> (String, bool) {
    let sentence_end = first
        .match_indices(". ")
        .map(|(i, _)| i + 1)
        .find(|&i| i >= 20 && first[..i].matches('`').count().is_multiple_of(2));
    if let Some(end) = sentence_end.filter(|&e| e <= crate::record::validate::MAX_SUBJECT_CHARS) {
        return (first[..end].to_string(), true);
    }
    crate::record::validate::fit_subject(first)
}

/// The text after a YAML front matter block (Cursor's `.mdc`), and the lines it took.
fn front_matter(text: &str) -> (usize, u32) {
    let Some(rest) = text.strip_prefix("---\n") else { return (0, 0) };
    match rest.find("\n---\n") {
        Some(end) => {
            let offset = 4 + end + 5;
            (offset, text[..offset].matches('\n').count() as u32)
        }
        None => (0, 0),
    }
}

/// Read `text` (the whole file) into candidates, in file order.
pub fn read(format: Format, text: &str) -> Vec<Candidate> {
    let (skip, _) = if format == Format::CursorRules { front_matter(text) } else { (0, 0) };
    let body = &text[skip..];
    let line_at = |byte: usize| (text[..skip + byte].matches('\n').count() + 1) as u32;
    // git-neo's own section (setup) is left out.
    let managed = match (body.find(crate::setup::BEGIN), body.find(crate::setup::END)) {
        (Some(b), Some(e)) if e > b => Some(b..e + crate::setup::END.len()),
        _ => None,
    };
    let mut out: Vec<Candidate> = Vec::new();
    let mut headings: Vec<(HeadingLevel, String)> = Vec::new();
    let mut heading: Option<(HeadingLevel, String)> = None;
    // Depth of open lists and block quotes; items are taken at the top level only.
    let mut lists = 0usize;
    let mut quotes = 0usize;
    let push = |range: std::ops::Range<usize>, headings: &[(HeadingLevel, String)], out: &mut Vec<Candidate>| {
        if managed.as_ref().is_some_and(|m| m.contains(&range.start)) {
            return;
        }
        let raw = body[range.clone()].trim_end();
        let all: Vec<&str> = raw.lines().collect();
        // The subject is the first paragraph, on one line: up to a blank line, a nested list or
        // a code fence.
        let opens_block = |l: &str| {
            let t = l.trim_start();
            t.starts_with("- ")
                || t.starts_with("* ")
                || t.starts_with("+ ")
                || t.starts_with("```")
                || t.split_once(". ").is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        };
        let para = 1 + all.iter().skip(1).take_while(|l| !l.trim().is_empty() && !opens_block(l)).count();
        let first = plain(&all[..para.min(all.len())].join(" "));
        if first.is_empty() {
            return;
        }
        let (subject, cut) = subject_of(&first);
        let rest: Vec<&str> = all.get(para..).unwrap_or_default().to_vec();
        let body_text = if cut || !rest.is_empty() {
            let indent =
                rest.iter().filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min().unwrap_or(0);
            let mut b = first.clone();
            for l in rest {
                b.push('\n');
                b.push_str(l.get(indent..).unwrap_or(l.trim_start()));
            }
            b
        } else {
            String::new()
        };
        let section: Vec<String> = headings.iter().map(|(_, h)| h.clone()).collect();
        let (fact_type, why) = type_of(&first, &section);
        let start = line_at(range.start);
        let end = line_at(range.start + raw.len().max(1) - 1);
        out.push(Candidate { fact_type, subject, body: body_text, lines: (start, end), section, why });
    };
    for (event, range) in Parser::new(body).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => heading = Some((level, String::new())),
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, text)) = heading.take() {
                    headings.retain(|(l, _)| *l < level);
                    headings.push((level, text.trim().to_string()));
                }
            }
            Event::Text(t) | Event::Code(t) if heading.is_some() => {
                if let Some((_, h)) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::Start(Tag::BlockQuote(_)) => quotes += 1,
            Event::End(TagEnd::BlockQuote(_)) => quotes = quotes.saturating_sub(1),
            Event::Start(Tag::List(_)) => lists += 1,
            Event::End(TagEnd::List(_)) => lists = lists.saturating_sub(1),
            Event::Start(Tag::Item) if lists == 1 && quotes == 0 => push(range, &headings, &mut out),
            Event::Start(Tag::Paragraph) if lists == 0 && quotes == 0 => push(range, &headings, &mut out),
            // A code block right under an item or paragraph belongs to it (a command, an example).
            Event::Start(Tag::CodeBlock(_)) if lists == 0 && quotes == 0 => {
                if managed.as_ref().is_some_and(|m| m.contains(&range.start)) {
                    continue;
                }
                let code = body[range.clone()].trim_end();
                let section: Vec<String> = headings.iter().map(|(_, h)| h.clone()).collect();
                let end = line_at(range.start + code.len().max(1) - 1);
                match out.last_mut().filter(|last| last.section == section) {
                    Some(last) => {
                        if last.body.is_empty() {
                            last.body = last.subject.clone();
                        }
                        last.body.push_str("\n\n");
                        last.body.push_str(code);
                        last.lines.1 = end;
                    }
                    // First in its section: the block stands for itself, named by its heading.
                    None => {
                        let first = code.lines().nth(1).unwrap_or("").trim();
                        if first.is_empty() || first.starts_with("```") {
                            continue;
                        }
                        let label = section.last().cloned().unwrap_or_else(|| "Code".into());
                        let (subject, _) = subject_of(&format!("{label}: `{}`", first.replace('`', "'")));
                        let (fact_type, why) = type_of(&subject, &section);
                        let start = line_at(range.start);
                        out.push(Candidate {
                            fact_type,
                            subject,
                            body: code.to_string(),
                            lines: (start, end),
                            section,
                            why,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bullets_and_paragraphs_become_typed_candidates_with_their_lines() {
        let text = "# Project\n\nThis service bills customers monthly.\n\n## Rules\n\n- Never call the payments API from tests.\n- Keep handlers small\n  and pure.\n\n## Architecture\n\n- The API lives in `src/api`.\n- Do not import `db` from `ui`.\n\n## Open questions\n\n- Why does the webhook retry twice?\n\n## Commands\n\nRun the tests with:\n\n```sh\ncargo test\n```\n";
        let c = read(Format::AgentsMd, text);
        let got: Vec<(FactType, &str, (u32, u32))> =
            c.iter().map(|c| (c.fact_type, c.subject.as_str(), c.lines)).collect();
        assert_eq!(
            got,
            vec![
                (FactType::Pattern, "This service bills customers monthly.", (3, 3)),
                (FactType::Constraint, "Never call the payments API from tests.", (7, 7)),
                (FactType::Constraint, "Keep handlers small and pure.", (8, 9)),
                (FactType::Architecture, "The API lives in `src/api`.", (13, 13)),
                (FactType::Constraint, "Do not import `db` from `ui`.", (14, 14)),
                (FactType::KnownUnknown, "Why does the webhook retry twice?", (18, 18)),
                (FactType::Pattern, "Run the tests with:", (22, 26)),
            ]
        );
        assert_eq!(c[2].body, "", "one paragraph: all in the subject");
        assert!(c[2].why.starts_with("heading"), "{}", c[2].why);
        assert!(c[1].why.starts_with("wording"), "{}", c[1].why);
        assert!(c[6].body.contains("cargo test"), "{:?}", c[6].body);
        assert_eq!(c[3].section, vec!["Project".to_string(), "Architecture".to_string()]);
    }

    #[test]
    fn a_label_does_not_hide_the_wording_and_a_long_paragraph_keeps_its_first_sentence_as_subject() {
        let text = "## Notes\n\n- **TODOs:** Do not use `TODO` in code. CI rejects it.\n- **Cargo:** run `./cargo.sh` instead of cargo. It pins the toolchain.\n";
        let c = read(Format::MemoryMd, text);
        assert_eq!(c[0].fact_type, FactType::Constraint, "{:?}", c[0]);
        assert_eq!(c[0].subject, "TODOs: Do not use `TODO` in code.");
        assert_eq!(c[0].body, "TODOs: Do not use `TODO` in code. CI rejects it.");
        assert_eq!(c[1].fact_type, FactType::Pattern);
        assert_eq!(c[1].subject, "Cargo: run `./cargo.sh` instead of cargo.");
    }

    #[test]
    fn cursor_front_matter_and_the_setup_section_are_skipped_and_long_lines_cut() {
        let long = format!("- {}", "word ".repeat(60));
        let text = format!(
            "---\ndescription: API rules\nglobs: src/**\nalwaysApply: true\n---\n- Always validate input.\n{long}\n\n{}\n- Use git neo recall first\n{}\n",
            crate::setup::BEGIN,
            crate::setup::END
        );
        let c = read(Format::CursorRules, &text);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!((c[0].subject.as_str(), c[0].lines), ("Always validate input.", (6, 6)));
        assert!(
            c[1].subject.chars().count() <= crate::record::validate::MAX_SUBJECT_CHARS && c[1].subject.ends_with('…')
        );
        assert!(c[1].body.starts_with("word word"), "the whole text is kept: {:?}", c[1].body);
    }
}
