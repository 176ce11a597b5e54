//! The canonical byte form: the only bytes the writer ever emits for a record.
//!
//! Rules (specified in `docs/format.md`, pinned by the snapshot tests below):
//! - `---\n`, then one `key: value` line per present field in the documented per-kind order, then
//!   `---\n`, then the body. LF line endings only. Optional fields that are absent or empty are omitted.
//! - Every string is a YAML double-quoted scalar; only `\\`, `\"`, `\n` and `\t` are escaped (other
//!   control characters are refused by validation, so never reach here). Words from a fixed set
//!   (kind, type, provenance, …) and numbers are plain scalars. Lists of strings use flow style
//!   `["a", "b"]`; lists of mappings use block style, two-space indent, one key per line.
//! - Numbers in thousandths are written `0.7`, `0.75`, `-0.05`, `1.0`: no `+`, no trailing zeros past
//!   the first fractional digit.
//! - The body has LF line endings, no leading blank lines, and ends with exactly one `\n`, or is empty.

use super::{
    Anchor, Attempt, Fact, Lesson, Outcome, Payload, Record, Relation, Retraction, Source, Supersession, FORMAT_VERSION,
};
use std::fmt::Write;

/// Write `s` as a YAML double-quoted scalar.
pub fn quote(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
}

struct Writer {
    out: String,
}

impl Writer {
    fn str(&mut self, key: &str, value: &str) {
        self.out.push_str(key);
        self.out.push_str(": ");
        quote(&mut self.out, value);
        self.out.push('\n');
    }

    fn opt_str(&mut self, key: &str, value: Option<&str>) {
        if let Some(v) = value {
            self.str(key, v);
        }
    }

    fn plain(&mut self, key: &str, value: impl std::fmt::Display) {
        let _ = writeln!(self.out, "{key}: {value}");
    }

    fn list<S: AsRef<str>>(&mut self, key: &str, items: &[S]) {
        if items.is_empty() {
            return;
        }
        self.out.push_str(key);
        self.out.push_str(": [");
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            quote(&mut self.out, item.as_ref());
        }
        self.out.push_str("]\n");
    }
}

fn fact(w: &mut Writer, f: &Fact) {
    w.plain("type", f.fact_type);
    w.str("subject", &f.subject);
    w.str("scope", &f.scope);
    w.list("tags", &f.tags);
    w.opt_str("key", f.key.as_deref());
    w.plain("provenance", f.provenance);
    w.plain("confidence", f.confidence);
    w.opt_str("valid_from", f.valid_from.map(|t| t.to_string()).as_deref());
    w.opt_str("valid_to", f.valid_to.map(|t| t.to_string()).as_deref());
    let deps: Vec<String> = f.depends_on.iter().map(|d| d.to_hex()).collect();
    w.list("depends_on", &deps);
    relations(w, &f.relations);
    anchors(w, &f.anchors);
    w.opt_str("suggestion", f.suggestion.as_deref());
    if !f.cites.is_empty() {
        w.out.push_str("cites:\n");
        for c in &f.cites {
            w.out.push_str("  - ");
            w.str("id", &c.id.to_hex());
            w.out.push_str("    ");
            w.str("section", &c.section);
        }
    }
}

fn source(w: &mut Writer, s: &Source) {
    w.str("path", &s.path);
    w.str("blob", &s.blob);
    w.opt_str("commit", s.commit.as_deref());
    w.str("title", &s.title);
    if s.sections.is_empty() {
        return;
    }
    w.out.push_str("sections:\n");
    for sec in &s.sections {
        w.out.push_str("  - ");
        w.str("heading", &sec.heading);
        let _ = writeln!(w.out, "    level: {}", sec.level);
        w.out.push_str("    ");
        w.str("lines", &sec.lines.to_string());
        w.out.push_str("    ");
        w.str("hash", &sec.hash);
    }
}

fn relations(w: &mut Writer, rels: &[Relation]) {
    if rels.is_empty() {
        return;
    }
    w.out.push_str("relations:\n");
    for r in rels {
        let _ = writeln!(w.out, "  - type: {}", r.rel);
        w.out.push_str("    ");
        w.str("id", &r.id.to_hex());
    }
}

fn anchors(w: &mut Writer, anchors: &[Anchor]) {
    if anchors.is_empty() {
        return;
    }
    w.out.push_str("anchors:\n");
    for a in anchors {
        w.out.push_str("  - ");
        w.str("path", &a.path);
        if let Some(lines) = a.lines {
            w.out.push_str("    ");
            w.str("lines", &lines.to_string());
        }
        if let Some(blob) = &a.blob {
            w.out.push_str("    ");
            w.str("blob", blob);
        }
        if let Some(commit) = &a.commit {
            w.out.push_str("    ");
            w.str("commit", commit);
        }
    }
}

fn attempt(w: &mut Writer, a: &Attempt) {
    w.str("task", &a.task);
    w.str("action", &a.action);
    w.str("observation", &a.observation);
    w.opt_str("inference", a.inference.as_deref());
    w.out.push_str("check:\n");
    if let Some(cmd) = &a.check.command {
        w.out.push_str("  ");
        w.str("command", cmd);
    }
    let _ = writeln!(w.out, "  result: {}", a.check.result);
    let _ = writeln!(w.out, "  source: {}", a.check.source);
    if let Some(code) = a.check.exit_code {
        let _ = writeln!(w.out, "  exit_code: {code}");
    }
    if let Some(ms) = a.check.duration_ms {
        let _ = writeln!(w.out, "  duration_ms: {ms}");
    }
    if let Some(output) = &a.check.output {
        w.out.push_str("  ");
        w.str("output", output);
    }
    if let Some(commit) = &a.check.commit {
        w.out.push_str("  ");
        w.str("commit", commit);
    }
    let _ = writeln!(w.out, "  dirty: {}", a.check.dirty);
    if !a.files.is_empty() {
        w.out.push_str("files:\n");
        for f in &a.files {
            w.out.push_str("  - ");
            w.str("path", &f.path);
            if let Some(blob) = &f.blob {
                w.out.push_str("    ");
                w.str("blob", blob);
            }
            let _ = writeln!(w.out, "    dirty: {}", f.dirty);
        }
    }
    w.opt_str("suggestion", a.suggestion.as_deref());
    w.opt_str("retry_of", a.retry_of.map(|r| r.to_hex()).as_deref());
    w.str("scope", &a.scope);
    w.list("tags", &a.tags);
}

fn supersession(w: &mut Writer, s: &Supersession) {
    w.str("old", &s.old.to_hex());
    w.opt_str("old_scope", s.old_scope.as_deref());
    w.opt_str("new", s.new.map(|n| n.to_hex()).as_deref());
    w.str("reason", &s.reason);
    w.plain("method", s.method);
    if let Some(score) = s.score {
        w.plain("score", score);
    }
}

fn outcome(w: &mut Writer, o: &Outcome) {
    w.str("target", &o.target.to_hex());
    w.str("signal", &o.signal);
    w.plain("delta", o.delta);
    w.list("commits", &o.commits);
    w.list("paths", &o.paths);
    w.str("key", &o.key);
}

fn lesson(w: &mut Writer, l: &Lesson) {
    w.str("file", &l.file);
    w.plain("change", l.change);
    w.str("before", &l.before);
    w.str("after", &l.after);
    w.str("original", &l.original);
    let because: Vec<String> = l.because.iter().map(|b| b.to_hex()).collect();
    w.list("because", &because);
    w.str("reason", &l.reason);
}

fn retraction(w: &mut Writer, r: &Retraction) {
    w.str("target", &r.target.to_hex());
    w.str("reason", &r.reason);
}

/// Normalise a body to its canonical form: LF line endings, no leading blank lines, no trailing
/// whitespace at the end, and one final `\n` unless empty.
pub fn normalize_body(body: &str) -> String {
    let unix = body.replace("\r\n", "\n").replace('\r', "\n");
    let lines: Vec<&str> = unix.split('\n').skip_while(|l| l.trim().is_empty()).collect();
    let core = lines.join("\n");
    let core = core.trim_end();
    if core.is_empty() {
        String::new()
    } else {
        format!("{core}\n")
    }
}

/// The canonical bytes of `record`. The body is normalised with [`normalize_body`].
pub fn to_bytes(record: &Record) -> Vec<u8> {
    let mut w = Writer { out: String::with_capacity(512 + record.body.len()) };
    w.out.push_str("---\n");
    w.plain("neo", FORMAT_VERSION);
    w.plain("kind", record.kind);
    match &record.payload {
        Payload::Fact(f) => fact(&mut w, f),
        Payload::Attempt(a) => attempt(&mut w, a),
        Payload::Supersession(s) => supersession(&mut w, s),
        Payload::Outcome(o) => outcome(&mut w, o),
        Payload::Retraction(r) => retraction(&mut w, r),
        Payload::Source(s) => source(&mut w, s),
        Payload::Lesson(l) => lesson(&mut w, l),
    }
    w.str("author", &record.author);
    w.str("created_at", &record.created_at.to_string());
    w.out.push_str("---\n");
    w.out.push_str(&normalize_body(&record.body));
    w.out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_normalisation() {
        for (input, want) in [
            ("", ""),
            ("\n\n  \n", ""),
            ("a", "a\n"),
            ("\r\n\r\n  indented\r\nnext  \r\n\n", "  indented\nnext\n"),
            ("x\n\n\ny\n\n\n", "x\n\n\ny\n"),
        ] {
            assert_eq!(normalize_body(input), want, "{input:?}");
        }
    }

    #[test]
    fn quoting_escapes_only_what_yaml_needs() {
        let mut out = String::new();
        quote(&mut out, "a \"b\" \\ c:\td\n#é");
        assert_eq!(out, r#""a \"b\" \\ c:\td\n#é""#);
    }
}
