//! PURE. Procedural lessons as patches to the agents' own instruction files: which files a
//! lesson may target, the section of lessons git-neo owns in a file, unified diffs (made and
//! applied strictly), content hashes, and what makes a patch append-only. No I/O: the use cases in
//! `api/learn/lessons.rs` read and write the work tree and the records.
//!
//! The rules a patch must keep (docs/lessons.md):
//! - **Targets** are the project's own instruction files and skills that `git neo setup` knows:
//!   `AGENTS.md`, `CLAUDE.md`, `GEMINI.md`, `.github/copilot-instructions.md`, a rule directly in
//!   `.cursor/rules/` (`.md` or `.mdc`) and `.claude/skills/**/SKILL.md`. Nothing else, and never
//!   a vendored or third-party one (a path through `vendor`, `third_party`, `node_modules`, …);
//!   symlinks and nested repositories are refused where the file is read (the use case).
//! - **Front matter** (a skill's or a rule's `---` block) is kept byte for byte: a patch that
//!   changes it is refused.
//! - **Append-only** means every hunk only inserts lines (completing a missing final newline
//!   excepted): that is the only kind `neo.lessons.mode=auto` applies; anything else waits for a
//!   person.
//! - **Hashes** are BLAKE3 of the file's bytes (as record ids are), so a patch names exactly the
//!   content it was made from and the content it makes.

use crate::record::{Lesson, LessonChange};
use std::ops::Range;

/// The largest instruction file a lesson patches (its whole text is kept in the record).
pub const MAX_FILE_BYTES: usize = 48 * 1024;

/// Lines of context around each hunk of a unified diff.
const CONTEXT: usize = 3;

/// The markers around the lessons git-neo appends to a file (its own section; `setup`'s
/// section of instructions is another).
pub const BEGIN: &str = "<!-- git-neo:lessons -->";
pub const END: &str = "<!-- git-neo:lessons:end -->";
const HEADING: &str = "## Lessons from this project's memory";

/// Directory names that mark third-party or vendored content.
const VENDORED: [&str; 7] = ["vendor", "vendored", "third_party", "third-party", "node_modules", "external", ".git"];

/// Whether `path` (repository-relative, `/` separators) is an instruction file a lesson may
/// target; the error names the rule it breaks and what is allowed.
pub fn check_target(path: &str) -> Result<(), String> {
    let allowed = "AGENTS.md, CLAUDE.md, GEMINI.md, .github/copilot-instructions.md, .cursor/rules/*.md(c) \
                   or .claude/skills/**/SKILL.md";
    if path.is_empty()
        || path.starts_with('/')
        || path.contains('\\')
        || path.split('/').any(|c| c == ".." || c == "." || c.is_empty())
    {
        return Err(format!("{path:?} is not a plain path inside the repository; name one of {allowed}"));
    }
    let parts: Vec<&str> = path.split('/').collect();
    if let Some(v) = parts.iter().find(|c| VENDORED.contains(&c.to_ascii_lowercase().as_str())) {
        return Err(format!(
            "{path:?} is vendored or third-party (it is under {v:?}); lessons patch only the project's own files"
        ));
    }
    let ok = match parts.as_slice() {
        ["AGENTS.md" | "CLAUDE.md" | "GEMINI.md"] => true,
        [".github", "copilot-instructions.md"] => true,
        [".cursor", "rules", name] => name.ends_with(".md") || name.ends_with(".mdc"),
        [".claude", "skills", rest @ ..] => rest.len() >= 2 && rest.last() == Some(&"SKILL.md"),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{path:?} is not an instruction file git-neo may patch; name one of {allowed}"))
    }
}

/// The BLAKE3 hash of `text`, in lowercase hex.
pub fn hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// The front matter block of `text` (from `---\n` to the closing `---` line, inclusive), if any.
pub fn front_matter(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---\n")?;
    let mut at = 4;
    for line in rest.split_inclusive('\n') {
        at += line.len();
        if line.trim_end() == "---" {
            return Some(&text[..at]);
        }
    }
    None
}

/// `before` with `lesson` added to git-neo's section of lessons: a new bullet before the
/// section's end marker, or the section appended at the end of the file when it has none. The
/// result only inserts lines (see [`is_append`]).
pub fn append(before: &str, lesson: &str) -> String {
    let bullet = format!("- {}\n", one_line(lesson));
    if let (Some(b), Some(e)) = (before.find(BEGIN), before.find(END)) {
        if b < e {
            // Insert at the start of the end marker's line.
            let line_start = before[..e].rfind('\n').map_or(0, |i| i + 1);
            if before[line_start..e].trim().is_empty() {
                return format!("{}{bullet}{}", &before[..line_start], &before[line_start..]);
            }
        }
    }
    let mut out = before.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&format!("{BEGIN}\n{HEADING}\n\n{bullet}{END}\n"));
    out
}

/// `text` as one line: runs of whitespace (newlines included) become one space.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Lines of `text`, each with its newline (the last may lack one).
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// Line hunks (0-based ranges before and after) between two texts.
fn hunks(before: &str, after: &str) -> Vec<(Range<u32>, Range<u32>)> {
    use imara_diff::{Algorithm, Diff, InternedInput};
    let input = InternedInput::new(before, after);
    let mut diff = Diff::compute(Algorithm::Histogram, &input);
    diff.postprocess_lines(&input);
    diff.hunks().map(|h| (h.before, h.after)).collect()
}

/// Whether going from `before` to `after` only inserts lines. Completing a last line that had no
/// newline counts as an insertion (appending to such a file must end that line first).
pub fn is_append(before: &str, after: &str) -> bool {
    let old = lines(before);
    let new = lines(after);
    hunks(before, after).iter().all(|(b, a)| {
        if b.is_empty() {
            return true;
        }
        // The one removal allowed: the unterminated last line, given its newline.
        b.len() == 1
            && b.end as usize == old.len()
            && !old[b.start as usize].ends_with('\n')
            && new.get(a.start as usize).is_some_and(|l| l.strip_suffix('\n') == Some(old[b.start as usize]))
    })
}

fn push_line(out: &mut String, prefix: char, line: &str) {
    out.push(prefix);
    match line.strip_suffix('\n') {
        Some(l) => {
            out.push_str(l);
            out.push('\n');
        }
        None => {
            out.push_str(line);
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
}

/// The unified diff from `before` to `after` of the file at `path` (empty when they are equal).
pub fn unified(path: &str, before: &str, after: &str) -> String {
    let old = lines(before);
    let new = lines(after);
    let all = hunks(before, after);
    if all.is_empty() {
        return String::new();
    }
    // Merge hunks whose contexts touch.
    let mut groups: Vec<Vec<(Range<u32>, Range<u32>)>> = Vec::new();
    for h in all {
        match groups.last_mut() {
            Some(g) if (h.0.start as usize) <= g.last().map_or(0, |l| l.0.end as usize) + 2 * CONTEXT => g.push(h),
            _ => groups.push(vec![h]),
        }
    }
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    for g in groups {
        let first = &g[0];
        let last = &g[g.len() - 1];
        let pre = (first.0.start as usize).min(CONTEXT);
        let old_start = first.0.start as usize - pre;
        let new_start = first.1.start as usize - pre;
        let old_end = (last.0.end as usize + CONTEXT).min(old.len());
        let new_end = new.len().min(last.1.end as usize + (old_end - last.0.end as usize));
        let count = |start: usize, end: usize| {
            if end == start {
                format!("{start},0")
            } else {
                format!("{},{}", start + 1, end - start)
            }
        };
        out.push_str(&format!("@@ -{} +{} @@\n", count(old_start, old_end), count(new_start, new_end)));
        let mut at = old_start;
        for (b, a) in &g {
            for line in &old[at..b.start as usize] {
                push_line(&mut out, ' ', line);
            }
            for line in &old[b.start as usize..b.end as usize] {
                push_line(&mut out, '-', line);
            }
            for line in &new[a.start as usize..a.end as usize] {
                push_line(&mut out, '+', line);
            }
            at = b.end as usize;
        }
        for line in &old[at..old_end] {
            push_line(&mut out, ' ', line);
        }
    }
    out
}

/// `before` with the unified `diff` applied, strictly: every context and removed line must match
/// where its hunk says. The error says which hunk and line did not.
pub fn apply(before: &str, diff: &str) -> Result<String, String> {
    let old = lines(before);
    let mut out = String::with_capacity(before.len() + diff.len());
    let mut at = 0usize;
    let mut diff_lines = diff.split_inclusive('\n').peekable();
    let mut hunk_no = 0;
    // The file header.
    for want in ["--- ", "+++ "] {
        match diff_lines.next() {
            Some(l) if l.starts_with(want) => {}
            _ => return Err(format!("the diff does not start with a {:?} header line", want.trim())),
        }
    }
    while let Some(header) = diff_lines.next() {
        hunk_no += 1;
        let start = parse_hunk_start(header)
            .ok_or_else(|| format!("hunk {hunk_no}: {:?} is not a hunk header", header.trim_end()))?;
        if start < at {
            return Err(format!("hunk {hunk_no} starts at line {} inside the hunk before it", start + 1));
        }
        if start > old.len() {
            return Err(format!("hunk {hunk_no} starts at line {}, past the file's end", start + 1));
        }
        old[at..start].iter().for_each(|l| out.push_str(l));
        at = start;
        while let Some(line) = diff_lines.peek() {
            if line.starts_with("@@") {
                break;
            }
            let line = diff_lines.next().unwrap_or_default();
            let no_newline = diff_lines.peek().is_some_and(|n| n.starts_with('\\'));
            if no_newline {
                diff_lines.next();
            }
            let (prefix, rest) = line.split_at(line.len().min(1));
            let text = rest.strip_suffix('\n').unwrap_or(rest);
            let full = if no_newline { text.to_string() } else { format!("{text}\n") };
            match prefix {
                " " | "-" => {
                    let have = old.get(at).ok_or_else(|| format!("hunk {hunk_no} runs past the file's end"))?;
                    if *have != full {
                        return Err(format!(
                            "hunk {hunk_no}: line {} is {:?}, the diff expects {:?}",
                            at + 1,
                            have.trim_end(),
                            text
                        ));
                    }
                    if prefix == " " {
                        out.push_str(have);
                    }
                    at += 1;
                }
                "+" => out.push_str(&full),
                _ => return Err(format!("hunk {hunk_no}: {:?} is not a diff line (' ', '-' or '+')", line.trim_end())),
            }
        }
    }
    old[at..].iter().for_each(|l| out.push_str(l));
    Ok(out)
}

/// The 0-based old start line of a hunk header `@@ -a,b +c,d @@` (a count of 0 means "after
/// line a").
fn parse_hunk_start(header: &str) -> Option<usize> {
    let rest = header.strip_prefix("@@ -")?;
    let old = rest.split_whitespace().next()?;
    let (start, count) = match old.split_once(',') {
        Some((s, c)) => (s.parse::<usize>().ok()?, c.parse::<usize>().ok()?),
        None => (old.parse::<usize>().ok()?, 1),
    };
    Some(if count == 0 { start } else { start.checked_sub(1)? })
}

/// The diff a lesson record's body carries: the text of its ```` ```diff ```` block.
pub fn diff_of_body(body: &str) -> Option<&str> {
    let start = body.find("```diff\n")? + "```diff\n".len();
    let len = body[start..].find("\n```").map(|i| i + 1)?;
    Some(&body[start..start + len])
}

/// A lesson record's body: why, then the diff in a fenced block.
pub fn body(why: &str, diff: &str) -> String {
    format!("{}\n\n```diff\n{diff}```\n", why.trim())
}

/// A lesson record checked against itself: an allowed target, `before` the hash of `original`,
/// the body's diff applying to `original` and giving the content hashed `after`, an `append`
/// that only inserts, and front matter kept. Returns the content the patch makes; the error is
/// the first rule broken, said so that `verify` can name it.
pub fn check(l: &Lesson, body: &str) -> Result<String, String> {
    check_target(&l.file)?;
    if hash(&l.original) != l.before {
        return Err(format!(
            "before is {}, but the original content it keeps hashes to {}",
            short(&l.before),
            short(&hash(&l.original))
        ));
    }
    let diff = diff_of_body(body).ok_or("the body has no ```diff block")?;
    let after =
        apply(&l.original, diff).map_err(|e| format!("its diff does not apply to the original content: {e}"))?;
    if hash(&after) != l.after {
        return Err(format!(
            "after is {}, but applying its diff gives content that hashes to {}",
            short(&l.after),
            short(&hash(&after))
        ));
    }
    if l.change == LessonChange::Append && !is_append(&l.original, &after) {
        return Err("it says append, but its diff removes or changes lines".into());
    }
    if let Some(fm) = front_matter(&l.original) {
        if !after.starts_with(fm) {
            return Err(format!("it changes the front matter of {}; a lesson keeps it byte for byte", l.file));
        }
    }
    Ok(after)
}

fn short(h: &str) -> &str {
    &h[..h.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_the_instruction_files_setup_knows_and_nothing_vendored() {
        for ok in [
            "AGENTS.md",
            "CLAUDE.md",
            "GEMINI.md",
            ".github/copilot-instructions.md",
            ".cursor/rules/x.mdc",
            ".claude/skills/release/SKILL.md",
            ".claude/skills/a/b/SKILL.md",
        ] {
            assert!(check_target(ok).is_ok(), "{ok}");
        }
        for bad in [
            "README.md",
            "src/AGENTS.md",
            "../AGENTS.md",
            "/etc/passwd",
            ".claude/skills/SKILL.md",
            ".claude/skills/vendor/x/SKILL.md",
            ".claude/skills/x/notes.md",
            ".cursor/rules/a/b.mdc",
            "./AGENTS.md",
        ] {
            assert!(check_target(bad).is_err(), "{bad}");
        }
        assert!(check_target(".claude/skills/third_party/x/SKILL.md").unwrap_err().contains("vendored"));
    }

    #[test]
    fn diffs_apply_back_exactly_including_missing_final_newlines() {
        let cases = [
            ("a\nb\nc\n", "a\nb\nc\nd\n"),
            ("", "x\n"),
            ("a\nb", "a\nb\n\nnew\n"),
            ("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nTWO\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\nthirteen"),
            ("keep\n", "keep\n"),
        ];
        for (before, after) in cases {
            let d = unified("AGENTS.md", before, after);
            if before == after {
                assert!(d.is_empty());
                continue;
            }
            assert_eq!(apply(before, &d).as_deref(), Ok(after), "{d}");
        }
        let d = unified("AGENTS.md", "a\nb\n", "a\nc\n");
        assert!(apply("a\nX\n", &d).unwrap_err().contains("line 2"), "context is checked");
    }

    #[test]
    fn appended_lessons_only_insert_and_keep_front_matter() {
        let skill = "---\nname: release\ndescription: how we release\n---\n# Release\nSteps.";
        let one = append(skill, "Run the tests with --locked\nbefore tagging.");
        assert!(one.starts_with(front_matter(skill).expect("the skill has front matter")));
        assert!(is_append(skill, &one), "{one}");
        assert!(one.contains("- Run the tests with --locked before tagging.\n"));
        let two = append(&one, "Second");
        assert!(is_append(&one, &two));
        assert_eq!(two.matches(BEGIN).count(), 1, "one section");
        assert!(two.find("- Second").expect("the second lesson") < two.find(END).expect("the end marker"));
        assert!(!is_append("a\nb\n", "a\nc\n"));
        assert!(is_append("", &append("", "x")));
    }

    #[test]
    fn the_diff_is_read_back_from_the_body() {
        let d = unified("AGENTS.md", "a\n", "a\nb\n");
        assert_eq!(diff_of_body(&body("because", &d)), Some(d.as_str()));
    }
}
