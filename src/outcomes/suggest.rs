//! Recognising a record's suggested code in a commit by what is distinctive about it.
//!
//! Every snippet shares most of its tokens with the rest of the code base (`pub`, `usize`, `Some`,
//! small numbers, words like "path" in comments), so a share of all tokens calls unrelated edits
//! adoptions. Here a token counts by how rare it is: its weight is its inverse document frequency
//! across the tracked files of the tree the scan started from ([`Rarity`]), and keywords, numbers
//! and one- or two-letter names weigh nothing. A snippet with no distinctive token cannot be
//! recognised and is never matched. A change counts only in a file related to the record (its
//! anchors, an attempt's affected files, or a file that already defined one of the snippet's
//! distinctive names), and never when the lines it adds were removed elsewhere in the same commit
//! (a move is not an adoption). Each match says which lines matched and why they are distinctive.

use super::diff::Change;
use super::tokens;
use crate::error::Result;
use crate::store::{ObjectId, Store};
use std::collections::{HashMap, HashSet};

/// The most tracked files read to count how common tokens are.
pub const MAX_RARITY_FILES: usize = 20_000;

/// A token found in more than this share of the files is common, whatever it is.
pub const COMMON_SHARE: f64 = 0.1;

/// Keywords, primitive types and literals of the languages a repository usually holds: they say
/// nothing about which code a snippet is.
const KEYWORDS: &[&str] = &[
    // Rust
    "as",
    "async",
    "await",
    "bool",
    "box",
    "break",
    "char",
    "const",
    "continue",
    "crate",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "fn",
    "for",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "match",
    "mod",
    "move",
    "mut",
    "pub",
    "ref",
    "return",
    "self",
    "Self",
    "static",
    "str",
    "struct",
    "super",
    "trait",
    "true",
    "type",
    "unsafe",
    "use",
    "where",
    "while",
    "Some",
    "None",
    "Ok",
    "Err",
    "Option",
    "Result",
    "String",
    "Vec",
    "Box",
    "usize",
    "isize",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "f32",
    "f64",
    "derive",
    "Debug",
    "Clone",
    "Default",
    "unwrap",
    "expect",
    "new",
    "len",
    "into",
    "iter",
    "map",
    "clone",
    "to_string",
    "from",
    // Python
    "def",
    "class",
    "import",
    "and",
    "or",
    "not",
    "is",
    "lambda",
    "pass",
    "with",
    "yield",
    "True",
    "False",
    "elif",
    "except",
    "finally",
    "raise",
    "try",
    "global",
    "nonlocal",
    "del",
    "assert",
    "print",
    "int",
    "float",
    "list",
    "dict",
    "tuple",
    "set",
    "object",
    // JavaScript, TypeScript, Go, Java, C
    "function",
    "var",
    "this",
    "null",
    "undefined",
    "export",
    "default",
    "package",
    "func",
    "interface",
    "chan",
    "go",
    "defer",
    "void",
    "long",
    "short",
    "double",
    "unsigned",
    "signed",
    "sizeof",
    "include",
    "define",
    "public",
    "private",
    "protected",
    "final",
    "throws",
    "throw",
    "catch",
    "switch",
    "case",
    "new",
    "delete",
    "typeof",
    "instanceof",
    "extends",
    "implements",
    "abstract",
    "string",
    "number",
    "boolean",
    "any",
    "nil",
    "err",
    "error",
];

/// Keywords that introduce a definition of the name that follows them.
const DEFINERS: &[&str] = &[
    "fn",
    "struct",
    "enum",
    "trait",
    "type",
    "const",
    "static",
    "let",
    "mod",
    "macro_rules",
    "def",
    "class",
    "function",
    "func",
    "var",
    "interface",
];

fn keyword(t: &str) -> bool {
    KEYWORDS.contains(&t)
}

/// A name could be distinctive: not a keyword, not a number, at least three characters.
pub fn name_like(t: &str) -> bool {
    t.chars().count() >= 3 && t.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_') && !keyword(t)
}

/// How many tracked files of a tree hold each token of interest.
#[derive(Clone, Debug, Default)]
pub struct Rarity {
    files: usize,
    df: HashMap<String, usize>,
}

impl Rarity {
    /// Count, for each of `wanted`, the text files of `tree` that hold it (at most
    /// [`MAX_RARITY_FILES`] files, each at most [`super::diff::MAX_DIFF_BYTES`]).
    pub fn of_tree(store: &Store, tree: ObjectId, wanted: &HashSet<String>) -> Result<Rarity> {
        let mut r = Rarity { files: 0, df: wanted.iter().map(|t| (t.clone(), 0)).collect() };
        for f in store.diff_files(None, Some(tree))?.into_iter().take(MAX_RARITY_FILES) {
            let Some(blob) = f.new_blob else { continue };
            let bytes = store.read_blob(blob)?;
            if bytes.len() > super::diff::MAX_DIFF_BYTES {
                continue;
            }
            let Ok(text) = std::str::from_utf8(&bytes) else { continue };
            r.add_file(text);
        }
        Ok(r)
    }

    /// Count one more file (tests build a rarity from texts).
    pub fn add_file(&mut self, text: &str) {
        self.files += 1;
        let seen: HashSet<String> = tokens(text).into_iter().collect();
        for (t, n) in self.df.iter_mut() {
            if seen.contains(t) {
                *n += 1;
            }
        }
    }

    /// A rarity over `texts`, counting `wanted`.
    pub fn of_texts<'a>(texts: impl IntoIterator<Item = &'a str>, wanted: &HashSet<String>) -> Rarity {
        let mut r = Rarity { files: 0, df: wanted.iter().map(|t| (t.clone(), 0)).collect() };
        for t in texts {
            r.add_file(t);
        }
        r
    }

    /// The files that hold `token` (0 for a token not counted).
    pub fn files_with(&self, token: &str) -> usize {
        self.df.get(token).copied().unwrap_or(0)
    }

    pub fn files(&self) -> usize {
        self.files
    }

    /// A token's weight: 0 for keywords, numbers, short names and names in more than
    /// [`COMMON_SHARE`] of the files (or more than two in a small tree); otherwise its inverse
    /// document frequency.
    pub fn weight(&self, token: &str) -> f64 {
        if !name_like(token) {
            return 0.0;
        }
        let df = self.files_with(token);
        if df > 2 && df as f64 > COMMON_SHARE * self.files as f64 {
            return 0.0;
        }
        (((self.files + 2) as f64) / ((df + 1) as f64)).ln().max(0.5)
    }
}

/// A snippet recognised in one changed file.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub path: String,
    /// Share of the snippet's distinctive weight the added lines hold.
    pub share: f64,
    /// 1-based numbers of the added lines holding its distinctive tokens.
    pub lines: Vec<u32>,
    /// The lines came from elsewhere in the same commit: a move, not an adoption.
    pub moved: bool,
    /// Why it matched, for the outcome record's body.
    pub why: String,
}

/// The distinctive tokens of `snippet`, each once, with their weights (empty: the snippet cannot
/// be recognised).
pub fn distinctive(snippet: &str, rarity: &Rarity) -> Vec<(String, f64)> {
    let mut seen = HashSet::new();
    tokens(snippet)
        .into_iter()
        .filter(|t| seen.insert(t.clone()))
        .map(|t| {
            let w = rarity.weight(&t);
            (t, w)
        })
        .filter(|(_, w)| *w > 0.0)
        .collect()
}

/// Whether `text` defines one of `names` (a definer keyword right before it).
pub fn defines(text: &str, names: &[(String, f64)]) -> bool {
    if names.is_empty() {
        return false;
    }
    let toks = tokens(text);
    toks.windows(2).any(|w| DEFINERS.contains(&w[0].as_str()) && names.iter().any(|(n, _)| *n == w[1]))
}

/// Lines removed by every change of a commit, trimmed (the other half of a move).
pub fn removed_lines(changes: &[Change]) -> HashSet<&str> {
    let mut out = HashSet::new();
    for ch in changes {
        let old: Vec<&str> = ch.old_text.lines().collect();
        if ch.new_path.is_none() {
            out.extend(old.iter().map(|l| l.trim()).filter(|l| !l.is_empty()));
            continue;
        }
        for (before, _) in &ch.hunks {
            out.extend(before.clone().filter_map(|i| old.get(i as usize)).map(|l| l.trim()).filter(|l| !l.is_empty()));
        }
    }
    out
}

/// The best match of the snippet (`all`: its tokens; `marks`: its distinctive ones) among the
/// lines `ch` adds, or `None` when none of its distinctive tokens is there.
pub fn in_change(
    ch: &Change,
    all: &[String],
    marks: &[(String, f64)],
    rarity: &Rarity,
    removed: &HashSet<&str>,
) -> Option<Found> {
    let path = ch.new_path.as_ref()?;
    let lines: Vec<&str> = ch.new_text.lines().collect();
    let added: Vec<u32> = if ch.old_path.is_none() || ch.old_blob.is_none() {
        (0..lines.len() as u32).collect()
    } else {
        ch.hunks.iter().flat_map(|(_, after)| after.clone()).collect()
    };
    let mut have: Vec<String> = Vec::new();
    let mut marked: Vec<u32> = Vec::new();
    for &i in &added {
        let Some(line) = lines.get(i as usize) else { continue };
        let toks = tokens(line);
        if toks.iter().any(|t| marks.iter().any(|(m, _)| m == t)) {
            marked.push(i + 1);
        }
        have.extend(toks);
    }
    if marked.is_empty() {
        return None;
    }
    let pool: HashSet<&str> = have.iter().map(String::as_str).collect();
    let total: f64 = marks.iter().map(|(_, w)| w).sum();
    let held: Vec<&(String, f64)> = marks.iter().filter(|(m, _)| pool.contains(m.as_str())).collect();
    let weighted = held.iter().map(|(_, w)| w).sum::<f64>() / total;
    // The snippet's shape counts too: when most of all its tokens (common ones included) are
    // not there, the share is no more than the share of those.
    let plain = super::token_share(all, &have);
    let share = if plain >= super::PARTIAL_SHARE { weighted } else { weighted.min(plain) };
    let moved = marked.iter().all(|n| lines.get(*n as usize - 1).is_some_and(|l| removed.contains(l.trim())));
    let names: Vec<String> =
        held.iter().map(|(m, _)| format!("{m} (in {} of {} files)", rarity.files_with(m), rarity.files())).collect();
    let why = format!(
        "{} of {path} add {}: {:.0}% of the snippet's distinctive weight{}",
        line_list(&marked),
        names.join(", "),
        share * 100.0,
        if moved { "; the same lines were removed elsewhere in the commit (a move)" } else { "" }
    );
    Some(Found { path: path.clone(), share, lines: marked, moved, why })
}

/// `line 4`, `lines 4-6`, `lines 4-6, 9`.
fn line_list(lines: &[u32]) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &n in lines {
        match runs.last_mut() {
            Some((_, e)) if *e + 1 == n => *e = n,
            _ => runs.push((n, n)),
        }
    }
    let parts: Vec<String> =
        runs.iter().map(|(s, e)| if s == e { s.to_string() } else { format!("{s}-{e}") }).collect();
    format!("{} {}", if lines.len() == 1 { "line" } else { "lines" }, parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rarity(files: &[&str], snippet: &str) -> Rarity {
        Rarity::of_texts(files.iter().copied(), &tokens(snippet).into_iter().collect())
    }

    #[test]
    fn keywords_numbers_and_common_names_weigh_nothing() {
        let files: Vec<String> =
            (0..30).map(|i| format!("pub fn f{i}(path: usize) -> Option<usize> {{ Some(1) }}")).collect();
        let mut refs: Vec<&str> = files.iter().map(String::as_str).collect();
        refs.push("const LINE_BUFFER_CAPACITY: usize = 64 * 1024;");
        let r = rarity(&refs, "const LINE_BUFFER_CAPACITY: usize = 64 * 1024; // path");
        for common in ["pub", "usize", "Some", "64", "1024", "path", "const"] {
            assert_eq!(r.weight(common), 0.0, "{common}");
        }
        assert!(r.weight("LINE_BUFFER_CAPACITY") > 2.0);
        let marks = distinctive("const LINE_BUFFER_CAPACITY: usize = 64 * 1024; // path", &r);
        assert_eq!(marks.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(), vec!["LINE_BUFFER_CAPACITY"]);
    }

    #[test]
    fn definitions_are_found_by_their_keyword() {
        let marks = vec![("DEFAULT_CAP".to_string(), 1.0)];
        assert!(defines("pub const DEFAULT_CAP: usize = 8;", &marks));
        assert!(!defines("let x = DEFAULT_CAP;", &marks));
    }

    #[test]
    fn line_lists_read_as_runs() {
        assert_eq!(line_list(&[4]), "line 4");
        assert_eq!(line_list(&[4, 5, 6, 9]), "lines 4-6, 9");
    }
}
