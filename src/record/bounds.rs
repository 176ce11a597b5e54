//! PURE: the bounds a record's raw bytes must keep before any parser allocates for them.
//!
//! A record may arrive from a stranger (a fork, a remote, a pull request) with a plain `git fetch`,
//! and every command reads every record. So the bytes are measured first, by a single pass that
//! allocates nothing per item: the file's size, the number of items in each list (block `- ` items
//! and flow `[a, b]` items), how deeply the front matter nests, and YAML anchors and aliases (which
//! let a small file expand into a large tree, and which records never need). A file over a bound is
//! named as invalid with the bound it broke and never reaches the YAML parser. The same check runs
//! on write, on read, in `verify`, in `sync` and in import, because all of them go through
//! [`super::parse::parse`].
//!
//! The scan is conservative: it may count a `- ` inside a quoted string that spans lines as an item
//! (the canonical writer never writes one), so it can refuse a hand-written oddity, never let an
//! oversized list through.

use super::validate::MAX_SECTIONS;
use super::Problem;

/// Largest record file, in bytes. The biggest records the writer makes are ingested documents'
/// sources (up to [`MAX_SECTIONS`] sections of a few dozen bytes each) and facts with a full body
/// (64 KiB): a quarter of this.
pub const MAX_RECORD_BYTES: usize = 512 * 1024;

/// Most items in any one list of the front matter: the longest list a valid record holds (a
/// source's sections).
pub const MAX_LIST_ITEMS: usize = MAX_SECTIONS;

/// Deepest nesting of the front matter (mappings, block lists and flow collections together). The
/// deepest valid record nests three levels (`check:` → `output:` or `sections:` → `- path:`).
pub const MAX_DEPTH: usize = 8;

/// Check `bytes` against the bounds before they are parsed. The problem names the bound and what to
/// do; the file is never decoded further when this fails.
pub fn check(bytes: &[u8]) -> Result<(), Problem> {
    check_size(bytes.len() as u64)?;
    // Only the front matter is YAML; the body is markdown, kept whole and never parsed here.
    let Some(front) = front_matter(bytes) else { return Ok(()) };
    if plainly_within(front) {
        return Ok(());
    }
    scan(front)
}

/// Whether `front` is within every bound by counting alone, as every record the writer makes
/// is: each list item needs a line or a comma of its own, so fewer of both than the list bound
/// means no list can pass it; no `&` or `*` means no anchor or alias; and shallow indentation with
/// few brackets cannot nest past the depth bound. One pass, no state: most records never reach
/// [`scan`], which only ever refuses more.
fn plainly_within(front: &[u8]) -> bool {
    let (mut lines, mut commas) = (0usize, 0usize);
    // Leading spaces and list dashes of the current line (a dash opens a level as indentation
    // does), and the deepest flow nesting outside quoted strings.
    let (mut indent, mut max_indent, mut flow, mut max_flow) = (0usize, 0usize, 0usize, 0usize);
    let mut line_start = true;
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < front.len() {
        let b = front[i];
        i += 1;
        if b == b'\n' {
            lines += 1;
            line_start = true;
            indent = 0;
            continue;
        }
        if let Some(q) = quote {
            if q == b'"' && b == b'\\' {
                i += 1;
            } else if b == q {
                quote = None;
            }
            continue;
        }
        if line_start && (b == b' ' || b == b'-') {
            indent += 1;
            max_indent = max_indent.max(indent);
            continue;
        }
        line_start = false;
        match b {
            b'"' | b'\'' => quote = Some(b),
            b',' => commas += 1,
            b'[' | b'{' => {
                flow += 1;
                max_flow = max_flow.max(flow);
            }
            b']' | b'}' => flow = flow.saturating_sub(1),
            b'&' | b'*' => return false,
            _ => {}
        }
    }
    // Columns 0 to 4 hold at most five block levels; three flow levels on top keep the whole at
    // the depth bound.
    lines < MAX_LIST_ITEMS && commas + 1 < MAX_LIST_ITEMS && max_indent <= 4 && max_flow <= MAX_DEPTH - 5
}

/// The size bound alone, for a reader that knows a file's size before its bytes (a git object's
/// header): the same problem [`check`] names.
pub fn check_size(len: u64) -> Result<(), Problem> {
    if len > MAX_RECORD_BYTES as u64 {
        return Err(Problem::new(
            "file",
            format!(
                "is {len} bytes; a record is at most {MAX_RECORD_BYTES} bytes: it was not written by git-neo, remove it from the memory ref"
            ),
        ));
    }
    Ok(())
}

/// The bytes between the opening `---\n` and the closing `\n---` line, if the file has them.
fn front_matter(bytes: &[u8]) -> Option<&[u8]> {
    let rest = bytes.strip_prefix(b"---\n").or_else(|| bytes.strip_prefix(b"---\r\n"))?;
    let mut at = 0;
    for line in rest.split(|&b| b == b'\n') {
        let trimmed = line.strip_suffix(b"\r").unwrap_or(line);
        if trimmed == b"---" {
            return Some(&rest[..at]);
        }
        at += line.len() + 1;
    }
    Some(rest)
}

/// One open list being counted: the column of its `-` (block) or its nesting level (flow), and the
/// items seen so far.
struct Open {
    column: usize,
    items: usize,
}

fn too_many(n: usize) -> Problem {
    Problem::new(
        "front matter",
        format!("has a list of more than {n} items; a record's lists hold at most {MAX_LIST_ITEMS}: it was not written by git-neo, remove it"),
    )
}

fn too_deep() -> Problem {
    Problem::new(
        "front matter",
        format!("nests more than {MAX_DEPTH} levels deep; records nest at most {MAX_DEPTH}: it was not written by git-neo, remove it"),
    )
}

fn alias(c: u8) -> Problem {
    Problem::new(
        "front matter",
        format!(
            "uses a YAML {} (`{}name`); records hold plain values only, write the value out",
            if c == b'&' { "anchor" } else { "alias" },
            c as char
        ),
    )
}

/// The rest of a line, past its list markers, at block depth `depth`: quoted strings skipped,
/// flow collections counted, anchors and aliases found where a value starts. Returns the last
/// value character seen (a quote stands for a quoted string, `:` for a key), which says whether
/// a trailing `|` or `>` opens a block scalar.
fn scan_values(body: &[u8], depth: usize) -> Result<Option<u8>, Problem> {
    let mut flow: Vec<usize> = Vec::new();
    let mut value_start = true;
    let mut i = 0;
    let mut last_value: Option<u8> = None;
    while i < body.len() {
        let c = body[i];
        match c {
            b'"' | b'\'' => {
                i += 1;
                while i < body.len() && body[i] != c {
                    i += if c == b'"' && body[i] == b'\\' { 2 } else { 1 };
                }
                value_start = false;
                last_value = Some(b'"');
            }
            b'#' if i > 0 && body[i - 1] == b' ' => break,
            b'[' | b'{' if value_start => {
                flow.push(0);
                if depth + flow.len() > MAX_DEPTH {
                    return Err(too_deep());
                }
                last_value = None;
            }
            b']' | b'}' if !flow.is_empty() => {
                flow.pop();
                value_start = false;
            }
            b',' if !flow.is_empty() => {
                let n = flow.last_mut().expect("checked non-empty");
                *n += 1;
                if *n >= MAX_LIST_ITEMS {
                    return Err(too_many(MAX_LIST_ITEMS));
                }
                value_start = true;
                i += 1;
                continue;
            }
            b':' if matches!(body.get(i + 1), None | Some(b' ') | Some(b'\r')) => {
                value_start = true;
                i += 1;
                last_value = Some(b':');
                continue;
            }
            b'&' | b'*' if value_start => return Err(alias(c)),
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            _ => {
                value_start = false;
                last_value = Some(c);
            }
        }
        i += 1;
    }
    Ok(last_value)
}

fn scan(front: &[u8]) -> Result<(), Problem> {
    // Block lists open at a column; a line less indented than an open list's dash closes it.
    let mut lists: Vec<Open> = Vec::new();
    // The columns of the block structure the current line sits in (mapping keys and list items).
    let mut levels: Vec<usize> = Vec::new();
    // Inside a block scalar (`key: |`): lines indented past this column are text.
    let mut scalar_at: Option<usize> = None;
    for line in front.split(|&b| b == b'\n') {
        let indent = line.iter().take_while(|&&b| b == b' ').count();
        let rest = &line[indent..];
        if rest.is_empty() || rest == b"\r" || rest[0] == b'#' {
            continue;
        }
        if let Some(col) = scalar_at {
            if indent > col {
                continue;
            }
            scalar_at = None;
        }
        // Leading `- ` markers: each opens (or continues) a list item one level deeper.
        let mut col = indent;
        let mut body = rest;
        let mut first = true;
        loop {
            while levels.last().is_some_and(|&l| l > col || (first && l == col)) {
                levels.pop();
            }
            if first {
                while lists.last().is_some_and(|l| l.column > col) {
                    lists.pop();
                }
            }
            let dash = body.first() == Some(&b'-') && matches!(body.get(1), None | Some(b' ') | Some(b'\r'));
            if !dash {
                if first {
                    while lists.last().is_some_and(|l| l.column >= col) {
                        lists.pop();
                    }
                }
                levels.push(col);
                break;
            }
            match lists.last_mut() {
                Some(open) if open.column == col => open.items += 1,
                _ => lists.push(Open { column: col, items: 1 }),
            }
            if lists.last().is_some_and(|l| l.items > MAX_LIST_ITEMS) {
                return Err(too_many(MAX_LIST_ITEMS));
            }
            levels.push(col);
            let skip = 1 + body[1..].iter().take_while(|&&b| b == b' ').count();
            col += skip;
            body = &body[skip..];
            first = false;
            if body.is_empty() {
                break;
            }
        }
        if levels.len() > MAX_DEPTH {
            return Err(too_deep());
        }
        let last_value = scan_values(body, levels.len())?;
        // `key: |` or `key: >-`: the following, more indented lines are text.
        let tail = body.iter().rposition(|&b| b != b' ' && b != b'\r').map(|e| &body[..=e]).unwrap_or(body);
        let block_scalar = tail
            .iter()
            .rposition(|&b| b == b'|' || b == b'>')
            .is_some_and(|p| tail[p + 1..].iter().all(|b| matches!(b, b'-' | b'+' | b'0'..=b'9')));
        if block_scalar && last_value.is_some() {
            scalar_at = Some(indent);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn front(lines: &str) -> Vec<u8> {
        format!("---\n{lines}---\nbody\n").into_bytes()
    }

    #[test]
    fn canonical_shapes_pass() {
        let ok = front(
            "neo: 1\nkind: fact\ntags: [\"a\", \"b, c\", \"[d]\"]\nanchors:\n  - path: \"src/a.rs\"\n    lines: 1-2\ncheck:\n  command: \"cargo test\"\n  output: |\n    - a\n    - b\n    - *c\nsubject: \"a & b * c\"\n",
        );
        assert_eq!(check(&ok), Ok(()));
    }

    #[test]
    fn what_counting_lets_through_the_scan_lets_through_too() {
        // Every shape the fast path accepts is one the full scan accepts: here at its edges.
        let cases = [
            front("neo: 1\ntags: [\"a\", \"b\"]\nanchors:\n  - path: \"x\"\n    lines: 1-2\n"),
            front(&format!("tags: [{}]\n", vec!["\"\""; MAX_LIST_ITEMS - 2].join(", "))),
            front("a: [[[1]]]\nb:\n  c:\n  - d: 1\n    e: \"x, ] & *\"\n"),
        ];
        for c in &cases {
            let f = front_matter(c).expect("front matter");
            assert!(plainly_within(f), "{}", String::from_utf8_lossy(f));
            assert_eq!(scan(f), Ok(()), "{}", String::from_utf8_lossy(f));
        }
    }

    #[test]
    fn counting_leaves_what_it_cannot_vouch_for_to_the_scan() {
        for tricky in
            ["a: \"]]]]]]]]\" [[[[[[[[[[1]]]]]]]]]]\n", "- - - - - - - - - - a\n", "a: &x 1\n", "a:\n     b: 1\n"]
        {
            let c = front(tricky);
            assert!(!plainly_within(front_matter(&c).expect("front matter")), "{tricky}");
        }
        assert!(check(&front("- - - - - - - - - - a\n")).is_err(), "dashes nest");
    }

    #[test]
    fn a_long_block_list_is_refused_before_parsing() {
        let mut s = String::from("tags:\n");
        for _ in 0..=MAX_LIST_ITEMS {
            s.push_str("- \"\"\n");
        }
        let p = check(&front(&s)).expect_err("over the list bound");
        assert!(p.message.contains("more than"), "{p}");
        // At the bound, it passes.
        let mut s = String::from("tags:\n");
        for _ in 0..MAX_LIST_ITEMS {
            s.push_str("- \"\"\n");
        }
        assert_eq!(check(&front(&s)), Ok(()));
    }

    #[test]
    fn a_long_flow_list_and_an_oversized_file_are_refused() {
        let s = format!("tags: [{}]\n", vec!["\"\""; MAX_LIST_ITEMS + 1].join(", "));
        assert!(check(&front(&s)).is_err());
        let big = vec![b'a'; MAX_RECORD_BYTES + 1];
        assert!(check(&big).expect_err("too big").message.contains("bytes"));
    }

    #[test]
    fn deep_nesting_and_aliases_are_refused() {
        let deep = format!("a: {}1{}\n", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(check(&front(&deep)).is_err());
        let mut block = String::new();
        for d in 0..=MAX_DEPTH {
            block.push_str(&format!("{}k{d}:\n", "  ".repeat(d)));
        }
        assert!(check(&front(&block)).is_err());
        assert!(check(&front("a: &x [1, 2]\nb: *x\n")).is_err());
        assert!(check(&front("tags:\n  - *x\n")).is_err());
        assert!(check(&front("tags: [a, *x]\n")).is_err());
    }
}
