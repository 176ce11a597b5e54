//! A fast reader for front matter in the canonical form, with the generic YAML parser as fallback.
//!
//! Loading 100k records is dominated by YAML scanning. Canonical front matter uses a tiny subset of
//! YAML (see `docs/format.md`): `key: value` lines, double-quoted strings with four escapes, flow
//! lists of quoted strings, plain words and numbers, and one level of block mappings or lists of
//! mappings. This reader accepts exactly that subset and returns `None` for anything else, so the
//! caller falls back to `serde_yaml`. Where it returns a value, it is the value `serde_yaml` would
//! produce: a differential test in this module and in `tests/it/format.rs` holds it to that.

use serde_yaml::{Mapping, Number, Value};
use std::iter::Peekable;
use std::str::Lines;

/// Parse canonical front matter, or `None` if it is not in the canonical subset.
pub fn front_matter(front: &str) -> Option<Mapping> {
    let mut map = Mapping::new();
    let mut lines = front.lines().peekable();
    while let Some(line) = lines.next() {
        let (key, rest) = key_of(line)?;
        let value = if rest.is_empty() { block(&mut lines)? } else { value(rest.strip_prefix(' ')?)? };
        if map.insert(Value::String(key.to_string()), value).is_some() {
            return None;
        }
    }
    Some(map)
}

fn key_of(line: &str) -> Option<(&str, &str)> {
    let colon = line.find(':')?;
    let key = &line[..colon];
    (!key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')).then(|| (key, &line[colon + 1..]))
}

fn insert_kv(map: &mut Mapping, text: &str) -> Option<()> {
    let (key, rest) = key_of(text)?;
    let v = value(rest.strip_prefix(' ')?)?;
    map.insert(Value::String(key.to_string()), v).is_none().then_some(())
}

fn block(lines: &mut Peekable<Lines<'_>>) -> Option<Value> {
    let first = *lines.peek()?;
    if first.starts_with("  - ") {
        let mut seq = Vec::new();
        while let Some(&line) = lines.peek() {
            let Some(item) = line.strip_prefix("  - ") else {
                if line.starts_with(' ') {
                    return None;
                }
                break;
            };
            lines.next();
            let mut m = Mapping::new();
            insert_kv(&mut m, item)?;
            while let Some(cont) = lines.peek().and_then(|l| l.strip_prefix("    ")) {
                lines.next();
                insert_kv(&mut m, cont)?;
            }
            seq.push(Value::Mapping(m));
        }
        Some(Value::Sequence(seq))
    } else if first.starts_with("  ") && !first.starts_with("   ") {
        let mut m = Mapping::new();
        while let Some(inner) = lines.peek().and_then(|l| l.strip_prefix("  ")) {
            if inner.starts_with(' ') || inner.starts_with('-') {
                return None;
            }
            lines.next();
            insert_kv(&mut m, inner)?;
        }
        Some(Value::Mapping(m))
    } else {
        None
    }
}

fn value(v: &str) -> Option<Value> {
    if v.starts_with('"') {
        let (s, rest) = quoted(v)?;
        return rest.is_empty().then_some(Value::String(s));
    }
    if let Some(inner) = v.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        let mut items = Vec::new();
        let mut rest = inner;
        while !rest.is_empty() {
            let (s, after) = quoted(rest)?;
            items.push(Value::String(s));
            rest = if after.is_empty() { after } else { after.strip_prefix(", ")? };
            if rest.is_empty() && !after.is_empty() {
                return None;
            }
        }
        return Some(Value::Sequence(items));
    }
    plain(v)
}

/// A double-quoted scalar at the start of `v`: its value and the text after the closing quote.
fn quoted(v: &str) -> Option<(String, &str)> {
    let body = v.strip_prefix('"')?;
    let mut out = String::with_capacity(body.len());
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &body[i + 1..])),
            '\\' => match chars.next()?.1 {
                '\\' => out.push('\\'),
                '"' => out.push('"'),
                'n' => out.push('\n'),
                't' => out.push('\t'),
                _ => return None,
            },
            c if c.is_control() => return None,
            c => out.push(c),
        }
    }
    None
}

fn plain(v: &str) -> Option<Value> {
    match v {
        "true" => return Some(Value::Bool(true)),
        "false" => return Some(Value::Bool(false)),
        "null" => return None,
        _ => {}
    }
    let b = v.as_bytes();
    if b.first().is_some_and(u8::is_ascii_lowercase) && b.iter().all(|&c| c.is_ascii_lowercase() || c == b'-') {
        return Some(Value::String(v.to_string()));
    }
    // Numbers: -?(0|[1-9][0-9]*)(.[0-9]+)?, and not "-0".
    let digits = v.strip_prefix('-').unwrap_or(v);
    let (int, frac) = match digits.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (digits, None),
    };
    let int_ok = int == "0" || (!int.is_empty() && !int.starts_with('0') && int.bytes().all(|c| c.is_ascii_digit()));
    let frac_ok = frac.is_none_or(|f| !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit()));
    if !int_ok || !frac_ok || v == "-0" {
        return None;
    }
    if frac.is_some() {
        return v.parse::<f64>().ok().map(|f| Value::Number(Number::from(f)));
    }
    if v.starts_with('-') {
        v.parse::<i64>().ok().map(|i| Value::Number(Number::from(i)))
    } else {
        v.parse::<u64>().ok().map(|u| Value::Number(Number::from(u)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow(front: &str) -> Option<Mapping> {
        match serde_yaml::from_str::<Value>(front) {
            Ok(Value::Mapping(m)) => Some(m),
            _ => None,
        }
    }

    #[test]
    fn agrees_with_serde_yaml_wherever_it_answers() {
        let docs = [
            "neo: 1\nkind: fact\nsubject: \"a \\\"b\\\" \\\\ c:\\td\\n#é 漢\"\nconfidence: 0.75\ndelta: -0.05\nscore: 1.0\n",
            "tags: [\"a\", \"b, c\", \"[d]\"]\nempty: []\n",
            "relations:\n  - type: extends\n    id: \"abc\"\n  - type: derives\n    id: \"def\"\nnext: x\n",
            "check:\n  command: \"cargo test\"\n  result: passed\n  dirty: false\n",
            "type: known-unknown\nn: 0\nbig: 18446744073709551615\nneg: -12\n",
        ];
        for d in docs {
            let fast = front_matter(d).unwrap_or_else(|| panic!("canonical doc not taken by the fast path: {d}"));
            assert_eq!(Some(fast), slow(d), "{d}");
        }
    }

    #[test]
    fn declines_everything_outside_the_subset() {
        for d in [
            "k: plain words\n",
            "k: \"x\" # comment\n",
            "k: 'single'\n",
            "k: null\n",
            "k: 01\n",
            "k: -0\n",
            "k: 1e3\n",
            "k: .5\n",
            "k: ~\n",
            "k: \"\\u0041\"\n",
            "k: [a, b]\n",
            "k: {a: 1}\n",
            "k:\n",
            "k: 1\nk: 2\n",
            "k: &a x\n",
            "k: |\n  text\n",
            "K: x\n",
            "k:  \"two spaces\"\n",
            "k: \"unterminated\n",
            "list:\n  - a: 1\n   b: 2\n",
        ] {
            assert_eq!(front_matter(d), None, "{d}");
        }
    }
}
