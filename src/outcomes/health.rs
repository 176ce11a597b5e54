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
//! a clear improvement is the same in the other direction. Anything else is no signal.
//! - **Import cycles**: the module graph of each language the commit touched, from the imports
//!   [`imports`] recognises, in the trees before and after; more files in cycles (strongly
//!   connected components, [`files_in_cycles`]) is a regression, fewer an improvement.

/// The languages measured, by file extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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

/// The files `path` imports (repository-relative paths that `exists`), read from its text:
/// Python `import a.b` / `from a.b import c` / relative `from .x import y`; JS/TS relative
/// `import … from './x'`, `export … from`, `require('./x')`; Rust `use crate::a::b` and
/// `use super::x`. Imports of packages outside the repository are not edges.
pub fn imports(lang: Lang, path: &str, text: &str, exists: &dyn Fn(&str) -> bool) -> Vec<String> {
    let dir = path.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
    let join = |base: &str, rel: &str| -> String {
        let mut parts: Vec<&str> = if base.is_empty() { Vec::new() } else { base.split('/').collect() };
        for seg in rel.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                s => parts.push(s),
            }
        }
        parts.join("/")
    };
    let first = |candidates: Vec<String>| candidates.into_iter().find(|c| c != path && exists(c));
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        let found = match lang {
            Lang::Python => {
                let module = if let Some(rest) = line.strip_prefix("from ") {
                    rest.split_whitespace().next()
                } else if let Some(rest) = line.strip_prefix("import ") {
                    rest.split([',', ' ']).next()
                } else {
                    None
                };
                module.and_then(|m| {
                    let dots = m.chars().take_while(|c| *c == '.').count();
                    let name = m[dots..].replace('.', "/");
                    let base = if dots == 0 { String::new() } else { join(dir, &"../".repeat(dots - 1)) };
                    let stem = join(&base, &name);
                    let mut c = vec![format!("{stem}.py"), format!("{stem}/__init__.py")];
                    if dots == 0 {
                        // Also relative to the file's own directory (scripts run from there).
                        let local = join(dir, &name);
                        c.push(format!("{local}.py"));
                    }
                    // `from pkg import mod` imports a module when pkg is a package.
                    if let Some((_, names)) = line.split_once(" import ") {
                        if let Some(n) = names.split([',', ' ', '(']).find(|n| !n.is_empty()) {
                            c.insert(0, format!("{}.py", join(&stem, n)));
                        }
                    }
                    first(c)
                })
            }
            Lang::Script => {
                let spec = ["from '", "from \"", "require('", "require(\"", "import '", "import \""]
                    .iter()
                    .find_map(|p| line.find(p).map(|i| &line[i + p.len()..]))
                    .and_then(|rest| rest.split(['\'', '"']).next())
                    .filter(|s| s.starts_with('.'));
                spec.and_then(|s| {
                    let stem = join(dir, s);
                    let exts = ["", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", "/index.ts", "/index.js"];
                    first(exts.iter().map(|e| format!("{stem}{e}")).collect())
                })
            }
            Lang::Rust => {
                let rest = line.strip_prefix("pub ").unwrap_or(line);
                rest.strip_prefix("use ").and_then(|u| {
                    let u = u.trim_end_matches(';');
                    let (root, tail) = if let Some(t) = u.strip_prefix("crate::") {
                        ("src".to_string(), t)
                    } else if let Some(t) = u.strip_prefix("super::") {
                        // `super` of src/a/b.rs is src/a; of src/a/mod.rs it is src.
                        let module_dir = if path.ends_with("/mod.rs") { join(dir, "..") } else { dir.to_string() };
                        (module_dir, t)
                    } else {
                        return None;
                    };
                    let segs: Vec<&str> =
                        tail.split("::").map(|s| s.trim_matches(|c: char| c == '{' || c == '}' || c == ' ')).collect();
                    // The longest module prefix that is a file: a::b::C -> a/b.rs, a/b/mod.rs, a.rs, …
                    (1..=segs.len()).rev().find_map(|n| {
                        let stem = join(&root, &segs[..n].join("/"));
                        first(vec![format!("{stem}.rs"), format!("{stem}/mod.rs")])
                    })
                })
            }
        };
        if let Some(f) = found {
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    out
}

/// How many files take part in an import cycle (strongly connected components of two or more
/// files, or a file importing itself), by Tarjan's algorithm.
pub fn files_in_cycles(graph: &std::collections::BTreeMap<String, Vec<String>>) -> usize {
    struct T<'g> {
        graph: &'g std::collections::BTreeMap<String, Vec<String>>,
        index: std::collections::HashMap<&'g str, usize>,
        low: std::collections::HashMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on: std::collections::HashSet<&'g str>,
        next: usize,
        in_cycles: usize,
    }
    impl<'g> T<'g> {
        fn visit(&mut self, v: &'g str) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            self.on.insert(v);
            for w in self.graph.get(v).map(|e| e.as_slice()).unwrap_or_default() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    if self.graph.contains_key(w) {
                        self.visit(w);
                        let lw = self.low[w];
                        let lv = self.low.get_mut(v).expect("visited");
                        *lv = (*lv).min(lw);
                    }
                } else if self.on.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut size = 0;
                let mut self_loop = false;
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    size += 1;
                    if w == v {
                        self_loop = self.graph.get(v).is_some_and(|e| e.iter().any(|x| x == v));
                        break;
                    }
                }
                if size > 1 || self_loop {
                    self.in_cycles += size;
                }
            }
        }
    }
    let mut t = T {
        graph,
        index: Default::default(),
        low: Default::default(),
        stack: Vec::new(),
        on: Default::default(),
        next: 0,
        in_cycles: 0,
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.in_cycles
}

#[cfg(test)]
mod cycle_tests {
    use super::*;
    use std::collections::BTreeMap;

    fn graph(files: &[(&str, &str)], lang: Lang) -> BTreeMap<String, Vec<String>> {
        let names: Vec<&str> = files.iter().map(|(p, _)| *p).collect();
        let exists = |p: &str| names.contains(&p);
        files.iter().map(|(p, text)| (p.to_string(), imports(lang, p, text, &exists))).collect()
    }

    #[test]
    fn imports_resolve_per_language() {
        let py = graph(
            &[("pkg/a.py", "from pkg.b import f\nimport os\n"), ("pkg/b.py", "from . import c\n"), ("pkg/c.py", "")],
            Lang::Python,
        );
        assert_eq!(py["pkg/a.py"], vec!["pkg/b.py"]);
        assert_eq!(py["pkg/b.py"], vec!["pkg/c.py"]);
        let ts = graph(
            &[
                ("web/a.ts", "import { x } from './b';\nimport React from 'react';\n"),
                ("web/b.ts", "export * from \"./lib\";\n"),
                ("web/lib/index.ts", ""),
            ],
            Lang::Script,
        );
        assert_eq!(ts["web/a.ts"], vec!["web/b.ts"]);
        assert_eq!(ts["web/b.ts"], vec!["web/lib/index.ts"]);
        let rs = graph(
            &[("src/a.rs", "use crate::b::Thing;\nuse std::fmt;\n"), ("src/b/mod.rs", "use super::a::f;\n")],
            Lang::Rust,
        );
        assert_eq!(rs["src/a.rs"], vec!["src/b/mod.rs"]);
        assert_eq!(rs["src/b/mod.rs"], vec!["src/a.rs"]);
        assert_eq!(files_in_cycles(&rs), 2);
    }

    #[test]
    fn cycles_are_counted_by_strongly_connected_components() {
        let g = |edges: &[(&str, &[&str])]| -> BTreeMap<String, Vec<String>> {
            edges.iter().map(|(a, bs)| (a.to_string(), bs.iter().map(|b| b.to_string()).collect())).collect()
        };
        assert_eq!(files_in_cycles(&g(&[("a", &["b"]), ("b", &["c"]), ("c", &[])])), 0);
        assert_eq!(files_in_cycles(&g(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"]), ("d", &["a"])])), 3);
        assert_eq!(files_in_cycles(&g(&[("a", &["a"]), ("b", &[])])), 1);
    }
}
