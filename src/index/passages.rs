//! PURE. Passages: how a record longer than the model's window is cut for the vector index.
//!
//! The model reads at most 256 tokens; a vector of a long body describes its beginning only, so
//! a question answered deep inside it cannot find it. A body too long for one window is split on
//! its markdown structure (pulldown-cmark's top-level blocks: headings, paragraphs, lists, code
//! blocks, quotes, tables; an oversized list is split between its items, never a code block),
//! grouped into passages of about [`TARGET_BYTES`]. A paragraph longer than that (an abstract,
//! notes pasted as one block) is cut between its sentences (`sentences`), so it becomes
//! windows of whole sentences rather than one vector of its first 256 tokens. Each passage starts with the record's subject
//! (unless it already says it: `says`) and the heading it sits under, so it reads on its own, and repeats the previous passage's last
//! block when that block is short (a little overlap, so a sentence that leads into the next block
//! is not cut from it; inside a long paragraph, windows overlap by their boundary sentence). Line ranges are 1-based and inclusive, within the body.
//!
//! The split is a function of the text alone, so recall can say which lines matched without
//! storing them.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// Passage size to aim for, in bytes of body (about 200 tokens of English, leaving room in the
/// window for the subject and heading).
pub const TARGET_BYTES: usize = 800;

/// A body (with its subject) up to this many bytes is one passage: it fits the window.
pub const SINGLE_BYTES: usize = 1_000;

/// The most passages a record gets (the keys leave 8 bits for the passage number); text past the
/// last one is still in the lexical index.
pub const MAX_PASSAGES: usize = 255;

/// Overlap: the previous passage's last block is repeated when at most this long.
const OVERLAP_BYTES: usize = 240;

/// One passage of a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Passage {
    /// What is embedded.
    pub text: String,
    /// First and last line of the body it covers (1-based, inclusive); (0, 0) for a record whose
    /// body is empty.
    pub lines: (usize, usize),
}

/// A top-level block: its byte range in the body, and whether it is a heading.
#[derive(Clone, Copy, Debug)]
struct Block {
    start: usize,
    end: usize,
    heading: bool,
}

/// The record's passages: one (subject and whole body) when it fits the window, else several.
pub fn split(subject: &str, body: &str) -> Vec<Passage> {
    let body_trimmed = body.trim_end();
    let line_count = body_trimmed.lines().count();
    if subject.len() + body_trimmed.len() <= SINGLE_BYTES {
        return vec![Passage {
            text: with_subject(subject, body_trimmed),
            lines: if line_count == 0 { (0, 0) } else { (1, line_count) },
        }];
    }
    let blocks = blocks(body_trimmed);
    // Counted on bytes: an offset may fall inside a multi-byte character (the end of a block minus
    // one), and a line break is one byte in UTF-8.
    let line_of = |offset: usize| {
        body_trimmed.as_bytes()[..offset.min(body_trimmed.len())].iter().filter(|&&b| b == b'\n').count() + 1
    };
    let mut passages: Vec<Passage> = Vec::new();
    let mut heading: Option<&str> = None;
    let mut group: Vec<Block> = Vec::new();
    let mut previous_last: Option<Block> = None;
    let flush = |group: &mut Vec<Block>, heading: Option<&str>, overlap: Option<Block>, out: &mut Vec<Passage>| {
        let (Some(first), Some(last)) = (group.first().copied(), group.last().copied()) else { return };
        let start = match overlap.filter(|o| o.end - o.start <= OVERLAP_BYTES && o.end <= first.start) {
            Some(o) => o.start,
            None => first.start,
        };
        let own = body_trimmed[start..last.end].trim();
        let text = match heading.filter(|_| !first.heading) {
            Some(h) => format!("{h}\n{own}"),
            None => own.to_string(),
        };
        out.push(Passage {
            text: with_subject(subject, &text),
            lines: (line_of(start), line_of(last.end.saturating_sub(1).max(start))),
        });
        group.clear();
    };
    for b in blocks {
        let size = group.last().map_or(0, |l| b.end - group[0].start.min(l.start));
        // A heading starts a new passage; so does a block that would overflow this one.
        if !group.is_empty() && (b.heading || size > TARGET_BYTES) {
            let last = group.last().copied();
            flush(&mut group, heading, previous_last, &mut passages);
            previous_last = last;
            if passages.len() == MAX_PASSAGES {
                return passages;
            }
        }
        if b.heading {
            heading = Some(body_trimmed[b.start..b.end].trim());
            previous_last = None;
        }
        group.push(b);
    }
    flush(&mut group, heading, previous_last, &mut passages);
    passages.truncate(MAX_PASSAGES);
    if passages.is_empty() {
        passages.push(Passage { text: with_subject(subject, body_trimmed), lines: (1, line_count.max(1)) });
    }
    passages
}

/// A passage's text: the subject on the first line, then `text`, unless `text` already says the
/// subject ([`says`]).
fn with_subject(subject: &str, text: &str) -> String {
    if says(text, subject) {
        text.to_string()
    } else {
        format!("{subject}\n{text}")
    }
}

/// Whether `text` already holds `subject` (spacing aside, a cut subject's trailing `…` aside).
///
/// Why: the vector is the mean of the model's token vectors, so words said twice weigh twice.
/// A subject is often a copy of the body's opening: cut from a long text with `…`
/// ([`crate::record::validate::fit_subject`]), a conversation turn's first words, a function's
/// docstring. Measured with the real model on CoSQA dev (6,267 functions whose docstring's first
/// line is the subject), vector-only MRR@10 rose from 0.505 to 0.520 when the repeated line was
/// left out; a title the abstract does not contain (SciFact) is unaffected.
fn says(text: &str, subject: &str) -> bool {
    let subject = subject.trim().trim_end_matches('…').trim_end_matches("...");
    let words: Vec<&str> = subject.split_whitespace().collect();
    if words.is_empty() {
        return true;
    }
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    flat.contains(&words.join(" "))
}

/// The body's top-level blocks in order; a list longer than [`TARGET_BYTES`] gives its items.
fn blocks(body: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    let mut list: Option<(usize, Vec<Block>)> = None;
    for (event, range) in Parser::new_ext(body, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            Event::Start(tag) => {
                if depth == 0 {
                    start = range.start;
                    if matches!(tag, Tag::List(_)) {
                        list = Some((range.start, Vec::new()));
                    }
                }
                if depth == 1 && matches!(tag, Tag::Item) {
                    if let Some((_, items)) = &mut list {
                        items.push(Block { start: range.start, end: range.end, heading: false });
                    }
                }
                depth += 1;
            }
            Event::End(tag) => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    let heading = matches!(tag, TagEnd::Heading(_));
                    match list.take() {
                        Some((s, items)) if range.end - s > TARGET_BYTES && !items.is_empty() => out.extend(items),
                        _ if matches!(tag, TagEnd::Paragraph) && range.end - start > TARGET_BYTES => {
                            out.extend(sentences(&body[start..range.end]).map(|(a, b)| Block {
                                start: start + a,
                                end: start + b,
                                heading: false,
                            }))
                        }
                        _ => out.push(Block { start, end: range.end, heading }),
                    }
                }
            }
            // Leaf blocks at the top level (a rule, raw HTML) are blocks of their own.
            _ if depth == 0 => out.push(Block { start: range.start, end: range.end, heading: false }),
            _ => {}
        }
    }
    out
}

/// The sentences of a paragraph as byte ranges that together cover it: a sentence ends at `.`,
/// `?` or `!` (and any closing quote or bracket) before white space and a capital, a digit or an
/// opening bracket, so "e.g. the" and "3.5 mg" do not end one. A paragraph with no such end is
/// one sentence.
fn sentences(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    std::iter::from_fn(move || {
        while start < bytes.len() {
            if i >= bytes.len() {
                let piece = (start, bytes.len());
                start = bytes.len();
                return Some(piece);
            }
            let b = bytes[i];
            i += 1;
            if !matches!(b, b'.' | b'?' | b'!') {
                continue;
            }
            let mut end = i;
            while end < bytes.len() && matches!(bytes[end], b'"' | b'\'' | b')' | b']') {
                end += 1;
            }
            let mut next = end;
            while next < bytes.len() && bytes[next].is_ascii_whitespace() {
                next += 1;
            }
            let starts_sentence = next < bytes.len()
                && (bytes[next].is_ascii_uppercase()
                    || bytes[next].is_ascii_digit()
                    || matches!(bytes[next], b'(' | b'"'));
            if next > end && starts_sentence && !abbreviation(&text[start..i - 1]) {
                let piece = (start, end);
                start = next;
                i = next;
                return Some(piece);
            }
        }
        None
    })
}

/// Whether `before` (the text up to a period) ends in an abbreviation that a number or a name
/// usually follows ("Fig. 2", "et al. Smith", "Dr. Lee").
fn abbreviation(before: &str) -> bool {
    const ABBREVIATIONS: &[&str] = &[
        "al", "approx", "cf", "dr", "eq", "eqs", "fig", "figs", "mr", "mrs", "ms", "no", "nos", "ref", "refs", "st",
        "vol", "vs",
    ];
    let word = before.rsplit(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or_default();
    ABBREVIATIONS.iter().any(|a| a.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long_body() -> String {
        let para = |n: usize| format!("Paragraph {n} explains one part of the runbook in some detail. ").repeat(4);
        format!(
            "{}\n\n{}\n\n## Rollback\n\n{}\n\n```sh\n{}\n```\n\n{}\n\n- first step\n- second step\n",
            para(1),
            para(2),
            para(3),
            "kubectl rollout undo deploy/api\n".repeat(30),
            para(4)
        )
    }

    #[test]
    fn a_short_record_is_one_passage_of_subject_and_body() {
        let p = split("Deploys go to Fly.io", "From the main branch.\nAfter review.\n");
        assert_eq!(
            p,
            vec![Passage { text: "Deploys go to Fly.io\nFrom the main branch.\nAfter review.".into(), lines: (1, 2) }]
        );
        assert_eq!(split("Only a subject", "")[0].lines, (0, 0));
    }

    #[test]
    fn a_subject_the_passage_already_says_is_not_said_twice() {
        // A subject cut from a long text with "…" (the whole text is the body).
        let text = "Billing retries a failed charge three times, an hour apart, then emails the owner. ".repeat(3);
        let (subject, cut) = crate::record::validate::fit_subject(&text);
        assert!(cut && subject.ends_with('…'), "{subject}");
        assert_eq!(split(&subject, &text)[0].text, text.trim_end());
        // A docstring repeated as the subject, spacing aside.
        let code = "def paste(xsel=False):\n    \"\"\"Returns system   clipboard contents.\"\"\"\n    return run()\n";
        assert_eq!(split("Returns system clipboard contents.", code)[0].text, code.trim_end());
        // Shared words are not the subject: it stays.
        assert!(split("Clipboard contents", code)[0].text.starts_with("Clipboard contents\n"));
        // Of a long body, only the passages that say the subject leave it out.
        let body = format!("Runbook for the API.\n\n{}", long_body());
        let passages = split("Runbook for the API.", &body);
        assert!(passages.len() >= 3);
        assert!(passages[0].text.starts_with("Runbook for the API.\n\nParagraph 1"), "{}", passages[0].text);
        assert!(passages[1..].iter().all(|p| p.text.starts_with("Runbook for the API.\n")));
        assert!(passages[1..].iter().all(|p| !p.text.contains("Runbook for the API.\n\n")));
    }

    #[test]
    fn a_long_record_splits_on_blocks_with_headings_lines_and_whole_code_blocks() {
        let body = long_body();
        let passages = split("Runbook", &body);
        assert!(passages.len() >= 3, "{passages:#?}");
        let lines: Vec<&str> = body.lines().collect();
        for p in &passages {
            assert!(p.text.starts_with("Runbook\n"), "every passage names its record: {}", p.text);
            assert!(p.lines.0 >= 1 && p.lines.0 <= p.lines.1 && p.lines.1 <= lines.len(), "{:?}", p.lines);
            // A code block is never cut: its fences come in pairs.
            assert_eq!(p.text.matches("```").count() % 2, 0, "{}", p.text);
        }
        let code = passages.iter().find(|p| p.text.contains("kubectl")).expect("the code block");
        assert!(code.text.contains("## Rollback"), "the heading it sits under: {}", code.text);
        assert_eq!(code.text.matches("kubectl").count(), 30, "whole");
        let last = passages.last().expect("last");
        assert_eq!(last.lines.1, lines.len(), "the passages reach the end of the body");
        assert!(lines[last.lines.1 - 1].contains("second step"));
        assert_eq!(split("Runbook", &body), passages, "deterministic");
    }

    #[test]
    fn multi_byte_text_at_block_ends_is_split_without_panicking() {
        // Real READMEs end blocks with "…", "→" and emoji: block ends minus one fall inside them.
        let para = "Ünïcödé everywhere, ends with an arrow →\n\n".repeat(40);
        let body = format!("{para}Last words ✅ … 日本語");
        let passages = split("Multi-byte", &body);
        assert!(passages.len() > 1);
        assert_eq!(passages.last().map(|p| p.lines.1), Some(body.lines().count()));
    }

    #[test]
    fn sentences_end_before_a_capital_not_inside_abbreviations_or_numbers() {
        let text = "Dose was 3.5 mg, e.g. twice. Results (n = 12) held! \"Why?\" Asked. (Fig. 2) ends as Smith et al. 2020 said.";
        let got: Vec<&str> = sentences(text).map(|(a, b)| &text[a..b]).collect();
        assert_eq!(
            got,
            [
                "Dose was 3.5 mg, e.g. twice.",
                "Results (n = 12) held!",
                "\"Why?\"",
                "Asked.",
                "(Fig. 2) ends as Smith et al. 2020 said."
            ]
        );
        assert_eq!(sentences("no end at all").count(), 1);
        assert_eq!(sentences("").count(), 0);
    }

    #[test]
    fn a_long_paragraph_becomes_overlapping_windows_of_whole_sentences() {
        // One paragraph of 30 sentences, like an abstract: it used to be one passage.
        let body: String = (0..30).map(|i| format!("Finding {i} holds for the cohort we studied. ")).collect();
        let passages = split("A study", body.trim());
        assert!(passages.len() >= 2, "{passages:#?}");
        for p in &passages {
            assert!(p.text.starts_with("A study\n"), "every window carries the subject");
            assert!(p.text.len() <= "A study\n".len() + TARGET_BYTES + 2 * 60, "{}", p.text.len());
            assert!(p.text.trim_end().ends_with('.'), "whole sentences: {}", p.text);
            assert_eq!(p.lines, (1, 1), "one line of the body");
        }
        for w in passages.windows(2) {
            let last_sentence = w[0].text.trim_end().rsplit(". ").next().expect("a sentence");
            assert!(w[1].text.contains(last_sentence), "windows overlap by a sentence");
        }
        assert!(passages.last().expect("last").text.contains("Finding 29 holds"), "the windows reach the end");
    }

    #[test]
    fn short_blocks_overlap_and_long_lists_split_between_items() {
        let items: String = (0..40).map(|i| format!("- item {i} of a long checklist that goes on\n")).collect();
        let body = format!("{}\n\nA short lead-in.\n\n{items}", "Intro sentence that is long enough. ".repeat(24));
        let passages = split("Checklist", &body);
        assert!(passages.len() >= 3, "{passages:#?}");
        assert!(passages.iter().skip(1).all(|p| p.text.contains("- item")), "lists split between items");
        let overlaps = passages.windows(2).filter(|w| w[1].lines.0 <= w[0].lines.1).count();
        assert!(overlaps >= 1, "a short last block is repeated: {passages:#?}");
        assert!(split("x", &"word ".repeat(100_000)).len() <= MAX_PASSAGES);
    }
}
