//! The reader's and verifier's parser: bytes in, a typed [`Record`] or every problem found.
//!
//! The parser never re-serialises: identity is the hash of the bytes it was given. It accepts any
//! YAML that means the same fields (so hand-written records that are not byte-canonical still
//! parse), but it is strict about meaning: unknown fields, wrong types, unknown words, and the
//! semantic rules in [`super::validate`] are all reported, each naming its field.

use super::validate::{validate, Problem, Problems};
use super::{
    AffectedFile, Anchor, Attempt, Check, CheckResult, CheckSource, Citation, Fact, FactType, Kind, Lesson,
    LessonChange, LineRange, Milli, Outcome, Payload, Provenance, Record, RecordId, Relation, RelationType, Retraction,
    Section, Source, Supersession, SupersessionMethod, Timestamp, FORMAT_VERSION,
};
use serde_yaml::{Mapping, Value};

/// Stands in for an id that failed to parse, so the remaining rules can still run.
const PLACEHOLDER_ID: RecordId = RecordId([0; 32]);

/// Split a record file into front matter and body at its `---` fences.
pub fn split(text: &str) -> Result<(&str, &str), Problem> {
    let rest = text.strip_prefix("---\n").ok_or_else(|| {
        Problem::new("file", "must start with a line `---` (LF line endings) opening the front matter")
    })?;
    if rest.starts_with("---\n") || rest == "---" {
        return Ok(("", rest.strip_prefix("---").and_then(|r| r.strip_prefix('\n')).unwrap_or("")));
    }
    let close = rest
        .find("\n---\n")
        .map(|i| (i, i + 5))
        .or_else(|| rest.strip_suffix("\n---").map(|fm| (fm.len(), rest.len())))
        .ok_or_else(|| Problem::new("file", "has no closing `---` line ending the front matter"))?;
    Ok((&rest[..close.0 + 1], &rest[close.1..]))
}

struct Fields {
    map: Mapping,
    problems: Vec<Problem>,
    prefix: String,
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

impl Fields {
    fn new(map: Mapping, prefix: &str) -> Fields {
        Fields { map, problems: Vec::new(), prefix: prefix.to_string() }
    }

    fn name(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    fn bad(&mut self, key: &str, msg: impl Into<String>) {
        let name = self.name(key);
        self.problems.push(Problem::new(name, msg));
    }

    fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    fn required(&mut self, key: &str) -> Option<Value> {
        let v = self.take(key);
        if v.is_none() {
            self.bad(key, "is missing; add it");
        }
        v
    }

    fn string_of(&mut self, key: &str, v: Value) -> Option<String> {
        match v {
            Value::String(s) => Some(s),
            other => {
                let t = type_name(&other);
                self.bad(key, format!("must be a string, found {t}; quote it"));
                None
            }
        }
    }

    fn req_str(&mut self, key: &str) -> Option<String> {
        let v = self.required(key)?;
        self.string_of(key, v)
    }

    fn opt_str(&mut self, key: &str) -> Option<String> {
        let v = self.take(key)?;
        self.string_of(key, v)
    }

    fn word<T>(&mut self, key: &str, required: bool, parse: fn(&str) -> Option<T>, expected: String) -> Option<T> {
        let v = if required { self.required(key)? } else { self.take(key)? };
        let s = self.string_of(key, v)?;
        let parsed = parse(&s);
        if parsed.is_none() {
            self.bad(key, format!("{s:?} is not one of: {expected}"));
        }
        parsed
    }

    fn id_of(&mut self, key: &str, s: &str) -> Option<RecordId> {
        let id = RecordId::from_hex(s);
        if id.is_none() {
            self.bad(key, format!("{s:?} is not a record id (64 lowercase hex digits)"));
        }
        id
    }

    fn req_id(&mut self, key: &str) -> Option<RecordId> {
        let s = self.req_str(key)?;
        self.id_of(key, &s)
    }

    fn opt_id(&mut self, key: &str) -> Option<RecordId> {
        let s = self.opt_str(key)?;
        self.id_of(key, &s)
    }

    fn number(&mut self, key: &str, required: bool) -> Option<Milli> {
        let v = if required { self.required(key)? } else { self.take(key)? };
        match v.as_f64().and_then(Milli::from_f64) {
            Some(m) => Some(m),
            None => {
                let t = type_name(&v);
                self.bad(key, format!("must be a number such as 0.7, found {t}"));
                None
            }
        }
    }

    fn integer(&mut self, key: &str) -> Option<i64> {
        let v = self.take(key)?;
        match v.as_i64() {
            Some(i) => Some(i),
            None => {
                let t = type_name(&v);
                self.bad(key, format!("must be a whole number, found {t}"));
                None
            }
        }
    }

    fn boolean(&mut self, key: &str) -> Option<bool> {
        let v = self.required(key)?;
        match v {
            Value::Bool(b) => Some(b),
            other => {
                let t = type_name(&other);
                self.bad(key, format!("must be true or false, found {t}"));
                None
            }
        }
    }

    fn time(&mut self, key: &str, required: bool) -> Option<Timestamp> {
        let s = if required { self.req_str(key)? } else { self.opt_str(key)? };
        let t = Timestamp::parse(&s);
        if t.is_none() {
            self.bad(key, format!("{s:?} is not a UTC time like 2026-01-31T12:00:00Z"));
        }
        t
    }

    fn list(&mut self, key: &str) -> Vec<Value> {
        match self.take(key) {
            None => Vec::new(),
            Some(Value::Sequence(items)) => items,
            Some(other) => {
                let t = type_name(&other);
                self.bad(key, format!("must be a list, found {t}"));
                Vec::new()
            }
        }
    }

    fn str_list(&mut self, key: &str) -> Vec<String> {
        let items = self.list(key);
        let mut out = Vec::with_capacity(items.len());
        for (i, v) in items.into_iter().enumerate() {
            if let Some(s) = self.string_of(&format!("{key}[{i}]"), v) {
                out.push(s);
            }
        }
        out
    }

    fn id_list(&mut self, key: &str) -> Vec<RecordId> {
        let strings = self.str_list(key);
        strings.iter().enumerate().filter_map(|(i, s)| self.id_of(&format!("{key}[{i}]"), s)).collect()
    }

    fn mapping_list(&mut self, key: &str) -> Vec<Fields> {
        let items = self.list(key);
        let mut out = Vec::with_capacity(items.len());
        for (i, v) in items.into_iter().enumerate() {
            let prefix = format!("{}{key}[{i}].", self.prefix);
            match v {
                Value::Mapping(m) => out.push(Fields::new(m, &prefix)),
                other => {
                    let t = type_name(&other);
                    self.bad(&format!("{key}[{i}]"), format!("must be a mapping, found {t}"));
                }
            }
        }
        out
    }

    fn sub(&mut self, key: &str) -> Option<Fields> {
        let prefix = format!("{}{key}.", self.prefix);
        match self.required(key)? {
            Value::Mapping(m) => Some(Fields::new(m, &prefix)),
            other => {
                let t = type_name(&other);
                self.bad(key, format!("must be a mapping, found {t}"));
                None
            }
        }
    }

    /// Report every key not consumed, then hand back the problems.
    fn finish(mut self) -> Vec<Problem> {
        let leftover: Vec<String> = self
            .map
            .iter()
            .map(|(k, _)| match k {
                Value::String(s) => s.clone(),
                other => format!("{other:?}"),
            })
            .collect();
        for k in leftover {
            self.bad(&k, "is not a field of this record kind; remove it (see docs/format.md)");
        }
        self.problems
    }

    fn absorb(&mut self, other: Fields) {
        self.problems.extend(other.finish());
    }
}

fn parse_lines(s: &str) -> Option<LineRange> {
    let (a, b) = s.split_once('-').unwrap_or((s, s));
    Some(LineRange { start: a.parse().ok()?, end: b.parse().ok()? })
}

fn parse_fact(f: &mut Fields) -> Fact {
    let fact_type = f.word("type", true, FactType::from_word, FactType::expected());
    let subject = f.req_str("subject");
    let scope = f.req_str("scope");
    let tags = f.str_list("tags");
    let key = f.opt_str("key");
    let provenance = f.word("provenance", true, Provenance::from_word, Provenance::expected());
    let confidence = f.number("confidence", true);
    let valid_from = f.time("valid_from", false);
    let valid_to = f.time("valid_to", false);
    let depends_on = f.id_list("depends_on");
    let mut relations = Vec::new();
    for mut r in f.mapping_list("relations") {
        let rel = r.word("type", true, RelationType::from_word, RelationType::expected());
        let id = r.req_id("id");
        if let (Some(rel), Some(id)) = (rel, id) {
            relations.push(Relation { rel, id });
        }
        f.absorb(r);
    }
    let mut anchors = Vec::new();
    for mut a in f.mapping_list("anchors") {
        let path = a.req_str("path");
        let lines = a.opt_str("lines").and_then(|s| {
            let parsed = parse_lines(&s);
            if parsed.is_none() {
                a.bad("lines", format!("{s:?} is not a line range like 10-20"));
            }
            parsed
        });
        let blob = a.opt_str("blob");
        let commit = a.opt_str("commit");
        if let Some(path) = path {
            anchors.push(Anchor { path, lines, blob, commit });
        }
        f.absorb(a);
    }
    let suggestion = f.opt_str("suggestion");
    let mut cites = Vec::new();
    for mut c in f.mapping_list("cites") {
        let id = c.req_id("id");
        let section = c.req_str("section");
        if let (Some(id), Some(section)) = (id, section) {
            cites.push(Citation { id, section });
        }
        f.absorb(c);
    }
    Fact {
        fact_type: fact_type.unwrap_or(FactType::Constraint),
        subject: subject.unwrap_or_default(),
        scope: scope.unwrap_or_default(),
        tags,
        key,
        provenance: provenance.unwrap_or(Provenance::Observed),
        confidence: confidence.unwrap_or_default(),
        valid_from,
        valid_to,
        depends_on,
        relations,
        anchors,
        suggestion,
        cites,
    }
}

fn parse_attempt(f: &mut Fields) -> Attempt {
    let task = f.req_str("task");
    let action = f.req_str("action");
    let observation = f.req_str("observation");
    let inference = f.opt_str("inference");
    let check = match f.sub("check") {
        Some(mut c) => {
            let command = c.opt_str("command");
            let result = c.word("result", true, CheckResult::from_word, CheckResult::expected());
            let source = c.word("source", true, CheckSource::from_word, CheckSource::expected());
            let exit_code = c.integer("exit_code");
            let duration_ms = c.integer("duration_ms").and_then(|d| u64::try_from(d).ok());
            let output = c.opt_str("output");
            let commit = c.opt_str("commit");
            let dirty = c.boolean("dirty");
            f.absorb(c);
            Check {
                command,
                result: result.unwrap_or(CheckResult::Unverified),
                source: source.unwrap_or(CheckSource::None),
                exit_code,
                duration_ms,
                output,
                commit,
                dirty: dirty.unwrap_or(false),
            }
        }
        None => Check::unverified(None, false),
    };
    let mut files = Vec::new();
    for mut m in f.mapping_list("files") {
        let path = m.req_str("path");
        let blob = m.opt_str("blob");
        let dirty = m.boolean("dirty");
        if let Some(path) = path {
            files.push(AffectedFile { path, blob, dirty: dirty.unwrap_or(false) });
        }
        f.absorb(m);
    }
    let suggestion = f.opt_str("suggestion");
    let retry_of = f.opt_id("retry_of");
    let scope = f.req_str("scope");
    let tags = f.str_list("tags");
    Attempt {
        task: task.unwrap_or_default(),
        action: action.unwrap_or_default(),
        observation: observation.unwrap_or_default(),
        inference,
        check,
        files,
        suggestion,
        retry_of,
        scope: scope.unwrap_or_default(),
        tags,
    }
}

fn parse_source(f: &mut Fields) -> Source {
    let path = f.req_str("path");
    let blob = f.req_str("blob");
    let commit = f.opt_str("commit");
    let title = f.req_str("title");
    let mut sections = Vec::new();
    for mut s in f.mapping_list("sections") {
        let heading = s.req_str("heading");
        let level = match s.integer("level") {
            Some(l) if (0..=6).contains(&l) => Some(l as u8),
            Some(l) => {
                s.bad("level", format!("{l} is not a heading level from 0 to 6"));
                None
            }
            None => {
                s.bad("level", "is required");
                None
            }
        };
        let lines = s.req_str("lines").and_then(|l| {
            let parsed = parse_lines(&l);
            if parsed.is_none() {
                s.bad("lines", format!("{l:?} is not a line range like 10-20"));
            }
            parsed
        });
        let hash = s.req_str("hash");
        if let (Some(heading), Some(level), Some(lines), Some(hash)) = (heading, level, lines, hash) {
            sections.push(Section { heading, level, lines, hash });
        }
        f.absorb(s);
    }
    Source {
        path: path.unwrap_or_default(),
        blob: blob.unwrap_or_default(),
        commit,
        title: title.unwrap_or_default(),
        sections,
    }
}

fn parse_supersession(f: &mut Fields) -> Supersession {
    let old = f.req_id("old");
    let old_scope = f.opt_str("old_scope");
    let new = f.opt_id("new");
    let reason = f.req_str("reason");
    let method = f.word("method", true, SupersessionMethod::from_word, SupersessionMethod::expected());
    let score = f.number("score", false);
    Supersession {
        old: old.unwrap_or(PLACEHOLDER_ID),
        old_scope,
        new,
        reason: reason.unwrap_or_default(),
        method: method.unwrap_or(SupersessionMethod::Explicit),
        score,
    }
}

fn parse_outcome(f: &mut Fields) -> Outcome {
    let target = f.req_id("target");
    let signal = f.req_str("signal");
    let delta = f.number("delta", true);
    let commits = f.str_list("commits");
    let paths = f.str_list("paths");
    let key = f.req_str("key");
    Outcome {
        target: target.unwrap_or(PLACEHOLDER_ID),
        signal: signal.unwrap_or_default(),
        delta: delta.unwrap_or_default(),
        commits,
        paths,
        key: key.unwrap_or_default(),
    }
}

fn parse_lesson(f: &mut Fields) -> Lesson {
    let file = f.req_str("file");
    let change = f.word("change", true, LessonChange::from_word, LessonChange::expected());
    let before = f.req_str("before");
    let after = f.req_str("after");
    let original = f.req_str("original");
    let because = f.id_list("because");
    let reason = f.req_str("reason");
    Lesson {
        file: file.unwrap_or_default(),
        change: change.unwrap_or(LessonChange::Rewrite),
        before: before.unwrap_or_default(),
        after: after.unwrap_or_default(),
        original: original.unwrap_or_default(),
        because,
        reason: reason.unwrap_or_default(),
    }
}

fn parse_retraction(f: &mut Fields) -> Retraction {
    let target = f.req_id("target");
    let reason = f.req_str("reason");
    Retraction { target: target.unwrap_or(PLACEHOLDER_ID), reason: reason.unwrap_or_default() }
}

/// Every field under `map` whose value (or a value inside it) carries a YAML tag, with the tag.
fn tagged_fields(map: &Mapping, prefix: &str) -> Vec<(String, String)> {
    fn walk(name: String, v: &Value, out: &mut Vec<(String, String)>) {
        match v {
            Value::Tagged(t) => out.push((name, t.tag.to_string())),
            Value::Sequence(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(format!("{name}[{i}]"), item, out);
                }
            }
            Value::Mapping(m) => out.extend(tagged_fields(m, &format!("{name}."))),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (k, v) in map {
        let key = match k {
            Value::String(s) => s.clone(),
            Value::Tagged(t) => {
                out.push((format!("{prefix}(a key)"), t.tag.to_string()));
                continue;
            }
            other => format!("{other:?}"),
        };
        walk(format!("{prefix}{key}"), v, &mut out);
    }
    out
}

/// Every YAML tag written in `front` (`!!python/object:…`, `!Custom`), with the top-level field it
/// sits under. The YAML reader resolves `!!` tags to plain values and drops them, so the tags are
/// found in the text: a `!` that starts a node (a value after `key: `, an item after `- `, an
/// element of a flow `[…]`/`{…}`), outside quotes, comments and block scalars.
fn written_tags(front: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut field = String::new();
    // Block scalar (`key: |`): lines indented deeper than the key line are text.
    let mut block: Option<usize> = None;
    let (mut single, mut double) = (false, false);
    for line in front.lines() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if let Some(b) = block {
            if line.trim().is_empty() || indent > b {
                continue;
            }
            block = None;
        }
        if indent == 0 && !single && !double {
            if let Some((key, _)) = line.split_once(':') {
                field = key.trim().to_string();
            }
        }
        let chars: Vec<char> = line.chars().collect();
        let mut node_start = !single && !double;
        let mut flow = 0usize;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if double {
                match c {
                    '\\' => i += 1,
                    '"' => double = false,
                    _ => {}
                }
                i += 1;
                continue;
            }
            if single {
                if c == '\'' {
                    if chars.get(i + 1) == Some(&'\'') {
                        i += 1;
                    } else {
                        single = false;
                    }
                }
                i += 1;
                continue;
            }
            let after_space = i == 0 || chars[i - 1] == ' ' || chars[i - 1] == '\t';
            match c {
                ' ' | '\t' => {}
                '#' if after_space => break,
                '!' if node_start => {
                    let end = (i..chars.len())
                        .find(|&j| chars[j] == ' ' || chars[j] == ',' || (flow > 0 && matches!(chars[j], ']' | '}')))
                        .unwrap_or(chars.len());
                    out.push((field.clone(), chars[i..end].iter().collect()));
                    i = end;
                    continue;
                }
                '&' if node_start => {
                    // An anchor: a tag may follow it.
                    while i < chars.len() && chars[i] != ' ' {
                        i += 1;
                    }
                    continue;
                }
                '"' if node_start => (double, node_start) = (true, false),
                '\'' if node_start => (single, node_start) = (true, false),
                '|' | '>' if node_start && flow == 0 => {
                    block = Some(indent);
                    break;
                }
                '[' | '{' if node_start || flow > 0 => {
                    flow += 1;
                    node_start = true;
                }
                ',' if flow > 0 => node_start = true,
                ']' | '}' if flow > 0 => {
                    flow -= 1;
                    node_start = false;
                }
                '-' if node_start && chars.get(i + 1).is_none_or(|n| *n == ' ') => {}
                ':' if chars.get(i + 1).is_none_or(|n| *n == ' ') => node_start = true,
                _ => node_start = false,
            }
            i += 1;
        }
    }
    out
}

/// Parse and validate a record file. On failure, every problem found is returned.
pub fn parse(bytes: &[u8]) -> Result<Record, Problems> {
    let fail = |p: Problem| Err(Problems(vec![p]));
    // Bounded before parsed: a stranger's record over a bound never reaches the YAML parser.
    if let Err(p) = super::bounds::check(bytes) {
        return fail(p);
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return fail(Problem::new(
                "file",
                format!("is not valid UTF-8 (first bad byte at offset {})", e.valid_up_to()),
            ))
        }
    };
    let (front, body) = match split(text) {
        Ok(parts) => parts,
        Err(p) => return fail(p),
    };
    if front.contains('\r') {
        return fail(Problem::new("file", "front matter has CR line endings; records use LF only"));
    }
    // Canonical front matter takes the fast path; anything else goes through the YAML parser.
    let map: Mapping = match super::fast::front_matter(front) {
        Some(m) => m,
        None => {
            match serde_yaml::from_str::<Value>(front) {
                Ok(Value::Mapping(m)) => {
                    // A YAML tag (`!!python/object:…`, `!Custom`) asks the reader to build an object of
                    // its choosing: records are plain data, so a tag anywhere is refused, by name.
                    let mut tagged = written_tags(front);
                    for (name, tag) in tagged_fields(&m, "") {
                        let top = name.split(['.', '[']).next().unwrap_or("").to_string();
                        if !tagged.iter().any(|(f, _)| *f == top) {
                            tagged.push((name, tag));
                        }
                    }
                    if !tagged.is_empty() {
                        return Err(Problems(
                        tagged
                            .into_iter()
                            .map(|(field, tag)| {
                                Problem::new(field, format!("carries the YAML tag {tag}; records hold plain values only, remove the tag"))
                            })
                            .collect(),
                    ));
                    }
                    m
                }
                Ok(Value::Null) => Mapping::new(),
                Ok(other) => {
                    return fail(Problem::new(
                        "front matter",
                        format!("must be a YAML mapping, found {}", type_name(&other)),
                    ))
                }
                Err(e) => return fail(Problem::new("front matter", format!("is not valid YAML: {e}"))),
            }
        }
    };
    let mut f = Fields::new(map, "");
    match f.required("neo") {
        Some(Value::Number(n)) if n.as_u64() == Some(u64::from(FORMAT_VERSION)) => {}
        Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v > u64::from(FORMAT_VERSION)) => f.bad(
            "neo",
            format!("format version {n} is newer than this git-neo understands ({FORMAT_VERSION}); upgrade git-neo"),
        ),
        Some(other) => f.bad("neo", format!("must be the format version {FORMAT_VERSION}, found {other:?}")),
        None => {}
    }
    let kind = f.word("kind", true, Kind::from_word, Kind::expected());
    let author = f.req_str("author");
    let created_at = f.time("created_at", true);
    let payload = match kind {
        Some(Kind::Fact) => Payload::Fact(parse_fact(&mut f)),
        Some(Kind::Attempt) => Payload::Attempt(parse_attempt(&mut f)),
        Some(Kind::Supersession) => Payload::Supersession(parse_supersession(&mut f)),
        Some(Kind::Outcome) => Payload::Outcome(parse_outcome(&mut f)),
        Some(Kind::Retraction) => Payload::Retraction(parse_retraction(&mut f)),
        Some(Kind::Source) => Payload::Source(parse_source(&mut f)),
        Some(Kind::Lesson) => Payload::Lesson(parse_lesson(&mut f)),
        None => {
            // Without a kind the remaining fields cannot be judged; report only what was found so far.
            return Err(Problems(f.problems));
        }
    };
    let mut problems = f.finish();
    // Fields that failed to parse hold placeholders; run the semantic rules anyway so every
    // problem is reported at once, skipping fields already reported.
    let record = Record {
        kind: kind.unwrap_or(Kind::Fact),
        payload,
        author: author.unwrap_or_default(),
        created_at: created_at.unwrap_or(Timestamp(0)),
        body: body.to_string(),
    };
    let reported: Vec<String> = problems.iter().map(|p| p.field.clone()).collect();
    problems.extend(validate(&record).into_iter().filter(|p| !reported.contains(&p.field)));
    if problems.is_empty() {
        Ok(record)
    } else {
        Err(Problems(problems))
    }
}
