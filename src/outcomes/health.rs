//! Code health: PURE. Simple, documented metrics of one source file, compared before and after a
//! commit linked to a record (docs/outcomes.md).
//!
//! - **File length**: lines.
//! - **Maximum nesting depth**: Rust, TypeScript and JavaScript count `{ }` nesting outside string
//!   literals and comments; Python counts indentation levels (the indentation of a line divided by
//!   the file's smallest indentation step).
//! - **Longest function**: lines from a function's header to its end: Rust `fn`, JS/TS `function`
//!   (and methods and arrow functions whose body opens with `{` on the header line), to the matching
//!   closing brace; Python `def`, to the next line indented no deeper than the header.
//!
//! A change is a clear regression when the maximum depth grows by 2 or more, or the longest
//! function grows by at least 50% and 20 lines, or the file doubles and grows by at least 200 lines;
//! a clear improvement is the same in the other direction. Anything else is no signal. Import
//! cycles are not measured (see docs/outcomes.md).

/// The languages measured, by file extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    Rust,
    Python,
    Script,
}

impl Lang {
    pub fn of(path: &str) -> Option<Lang> {
        match path.rsplit_once('.').map(|(_, e)| e) {
            Some("rs") => Some(Lang::Rust),
            Some("py") => Some(Lang::Python),
            Some("js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs") => Some(Lang::Script),
            _ => None,
        }
    }
}

/// The metrics of one file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Metrics {
    pub lines: u32,
    pub max_depth: u32,
    pub longest_function: u32,
}

/// Brace depth per line (depth at the line's start), ignoring strings and comments.
fn brace_depths(text: &str) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut depth: i64 = 0;
    let mut in_block_comment = false;
    for line in text.lines() {
        let start = depth.max(0) as u32;
        let mut max = start;
        let mut chars = line.chars().peekable();
        let mut quote: Option<char> = None;
        while let Some(c) = chars.next() {
            if in_block_comment {
                if c == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    in_block_comment = false;
                }
                continue;
            }
            if let Some(q) = quote {
                if c == '\\' {
                    chars.next();
                } else if c == q {
                    quote = None;
                }
                continue;
            }
            match c {
                '/' if chars.peek() == Some(&'/') => break,
                '/' if chars.peek() == Some(&'*') => {
                    chars.next();
                    in_block_comment = true;
                }
                '"' | '`' => quote = Some(c),
                '{' => {
                    depth += 1;
                    max = max.max(depth.max(0) as u32);
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        out.push((start, max));
    }
    out
}

fn braces(text: &str, header: &dyn Fn(&str) -> bool) -> Metrics {
    let depths = brace_depths(text);
    let lines: Vec<&str> = text.lines().collect();
    let max_depth = depths.iter().map(|(_, m)| *m).max().unwrap_or(0);
    let mut longest = 0;
    for (i, l) in lines.iter().enumerate() {
        if !header(l.trim_start()) {
            continue;
        }
        let start_depth = depths[i].0;
        // The function ends on the first later line that starts back at the header's depth after
        // its body opened.
        let mut opened = depths[i].1 > start_depth;
        let mut end = i;
        for (j, (s, m)) in depths.iter().enumerate().skip(i + 1) {
            end = j;
            if *m > start_depth || *s > start_depth {
                opened = true;
            }
            let next_start = depths.get(j + 1).map(|d| d.0).unwrap_or(0);
            if opened && next_start <= start_depth {
                break;
            }
        }
        longest = longest.max((end - i + 1) as u32);
    }
    Metrics { lines: lines.len() as u32, max_depth, longest_function: longest }
}

fn python(text: &str) -> Metrics {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let step = lines.iter().filter(|l| !l.trim().is_empty()).map(|l| indent(l)).filter(|n| *n > 0).min().unwrap_or(4);
    let max_depth = lines.iter().filter(|l| !l.trim().is_empty()).map(|l| (indent(l) / step) as u32).max().unwrap_or(0);
    let mut longest = 0;
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if !(t.starts_with("def ") || t.starts_with("async def ")) {
            continue;
        }
        let base = indent(l);
        let mut end = i;
        for (j, m) in lines.iter().enumerate().skip(i + 1) {
            if m.trim().is_empty() {
                continue;
            }
            if indent(m) <= base {
                break;
            }
            end = j;
        }
        longest = longest.max((end - i + 1) as u32);
    }
    Metrics { lines: lines.len() as u32, max_depth, longest_function: longest }
}

/// Measure `text` as `lang`.
pub fn measure(lang: Lang, text: &str) -> Metrics {
    match lang {
        Lang::Rust => braces(text, &|l: &str| {
            let l = l.trim_start_matches("pub ").trim_start_matches("pub(crate) ");
            let l = l.trim_start_matches("async ").trim_start_matches("const ").trim_start_matches("unsafe ");
            l.starts_with("fn ")
        }),
        Lang::Script => braces(text, &|l: &str| {
            l.starts_with("function ")
                || l.starts_with("async function ")
                || l.starts_with("export function ")
                || l.starts_with("export async function ")
                || (l.contains("=>") && l.trim_end().ends_with('{'))
        }),
        Lang::Python => python(text),
    }
}

/// Whether a change from `before` to `after` is a clear improvement (+1), a clear regression (-1),
/// or neither (0).
pub fn verdict(before: Metrics, after: Metrics) -> i32 {
    let worse = |b: Metrics, a: Metrics| {
        a.max_depth >= b.max_depth + 2
            || (a.longest_function >= b.longest_function + 20
                && f64::from(a.longest_function) >= 1.5 * f64::from(b.longest_function))
            || (a.lines >= b.lines + 200 && a.lines >= 2 * b.lines)
    };
    match (worse(before, after), worse(after, before)) {
        (true, false) => -1,
        (false, true) => 1,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_depth_and_function_length() {
        let text = "fn a() {\n    if x {\n        if y {\n            z(\"}\");\n        }\n    }\n}\n\nfn b() {\n    one();\n}\n";
        let m = measure(Lang::Rust, text);
        assert_eq!(m, Metrics { lines: 11, max_depth: 3, longest_function: 7 });
    }

    #[test]
    fn python_depth_and_function_length() {
        let text = "def a():\n    if x:\n        y()\n    return 1\n\ndef b():\n    pass\n";
        assert_eq!(measure(Lang::Python, text), Metrics { lines: 7, max_depth: 2, longest_function: 4 });
    }

    #[test]
    fn verdicts_need_a_clear_change() {
        let base = Metrics { lines: 100, max_depth: 3, longest_function: 30 };
        assert_eq!(verdict(base, Metrics { max_depth: 5, ..base }), -1);
        assert_eq!(verdict(Metrics { max_depth: 5, ..base }, base), 1);
        assert_eq!(verdict(base, Metrics { max_depth: 4, lines: 120, ..base }), 0);
        assert_eq!(verdict(base, Metrics { longest_function: 60, ..base }), -1);
        assert_eq!(verdict(base, Metrics { longest_function: 40, ..base }), 0, "not 50%");
    }
}
