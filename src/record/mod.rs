//! Records: the one source of truth, and PURE (no I/O, no git).
//!
//! A record is one UTF-8 markdown file with YAML front matter. This module owns the typed model
//! ([`Record`] and its payloads), the canonical byte form the writer emits ([`canonical`]), the
//! parser the reader and verifier use ([`parse`]), the semantic rules both share ([`validate`]) and
//! identity ([`RecordId`]: the BLAKE3 hash of the file's exact bytes). The byte format is specified
//! in `docs/format.md`; the snapshot tests in `canonical` pin it.

pub mod bounds;
pub mod canonical;
pub mod fast;
pub mod id;
pub mod parse;
pub mod time;
pub mod validate;

pub use id::RecordId;
pub use time::Timestamp;
pub use validate::{Problem, Problems};

use serde::Serialize;
use std::fmt;

/// The format version written in every record's `neo:` field and in the ref's `FORMAT` entry.
pub const FORMAT_VERSION: u32 = 1;

macro_rules! word_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $word:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        pub enum $name { $(#[serde(rename = $word)] $variant),+ }

        impl $name {
            /// Every value, in the documented order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The word used in front matter and on the command line.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $word),+ }
            }

            /// Parse the front-matter word; `None` when it is not one of [`Self::ALL`].
            pub fn from_word(s: &str) -> Option<Self> {
                match s { $($word => Some($name::$variant),)+ _ => None }
            }

            /// The accepted words joined for error messages.
            pub fn expected() -> String {
                Self::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
    };
}

word_enum!(
    /// What a record is. Each kind has its own directory on the memory ref.
    Kind {
        Fact => "fact",
        Attempt => "attempt",
        Supersession => "supersession",
        Outcome => "outcome",
        Retraction => "retraction",
        Source => "source",
        Lesson => "lesson",
    }
);

impl Kind {
    /// The top-level directory holding records of this kind on the memory ref.
    pub fn dir(self) -> &'static str {
        match self {
            Kind::Fact => "facts",
            Kind::Attempt => "attempts",
            Kind::Supersession => "supersessions",
            Kind::Outcome => "outcomes",
            Kind::Retraction => "retractions",
            Kind::Source => "sources",
            Kind::Lesson => "lessons",
        }
    }

    /// The kind stored in a top-level directory, the inverse of [`Kind::dir`].
    pub fn from_dir(dir: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.dir() == dir)
    }
}

word_enum!(
    /// The type of a fact.
    FactType {
        Constraint => "constraint",
        Architecture => "architecture",
        Pattern => "pattern",
        Review => "review",
        Decision => "decision",
        KnownUnknown => "known-unknown",
        Failure => "failure",
    }
);

impl FactType {
    /// Whether a fact of this type reports an event (a failure seen, a review note made) rather
    /// than a state: a second failure or review about the same component is a second event, never
    /// an update of the first, so the frame rule neither replaces nor pairs them.
    pub fn is_event(self) -> bool {
        matches!(self, FactType::Failure | FactType::Review)
    }
}

word_enum!(
    /// What a lesson patch does to its file: only inserts lines (`append`, the kind
    /// `neo.lessons.mode=auto` applies), or anything else (`rewrite`, always reviewed).
    LessonChange {
        Append => "append",
        Rewrite => "rewrite",
    }
);

word_enum!(
    /// Where a fact's knowledge came from.
    Provenance {
        Structural => "structural",
        Observed => "observed",
        Inferred => "inferred",
    }
);

word_enum!(
    /// How one fact relates to another.
    RelationType {
        Extends => "extends",
        Derives => "derives",
        Updates => "updates",
    }
);

word_enum!(
    /// The result of an attempt's check.
    CheckResult {
        Passed => "passed",
        Failed => "failed",
        Unverified => "unverified",
    }
);

word_enum!(
    /// How an attempt's check result is known.
    CheckSource {
        Reported => "reported",
        Observed => "observed",
        None => "none",
    }
);

word_enum!(
    /// How a supersession was decided.
    SupersessionMethod {
        Key => "key",
        Similarity => "similarity",
        Explicit => "explicit",
        Outdated => "outdated",
        Frame => "frame",
        Document => "document",
        Curation => "curation",
    }
);

/// A signed amount in thousandths, used for confidence (0..=1000) and outcome deltas.
///
/// Stored as an integer so the fold never depends on floating-point summation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Milli(pub i32);

impl Milli {
    /// The full scale, 1.0.
    pub const ONE: Milli = Milli(1000);

    /// Clamped to 0.0..=1.0.
    pub fn clamp_unit(self) -> Milli {
        Milli(self.0.clamp(0, 1000))
    }

    /// The value as a float, for display and JSON.
    pub fn as_f64(self) -> f64 {
        f64::from(self.0) / 1000.0
    }

    /// Round a float to thousandths; `None` for NaN, infinities and values beyond ±1000.0.
    pub fn from_f64(v: f64) -> Option<Milli> {
        if !v.is_finite() || v.abs() > 1000.0 {
            return None;
        }
        Some(Milli((v * 1000.0).round() as i32))
    }
}

impl Serialize for Milli {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.as_f64())
    }
}

impl fmt::Display for Milli {
    /// Canonical decimal form: no `+`, at least one fractional digit, no trailing zeros beyond it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        let mut frac = format!("{:03}", abs % 1000);
        while frac.len() > 1 && frac.ends_with('0') {
            frac.pop();
        }
        write!(f, "{sign}{}.{frac}", abs / 1000)
    }
}

/// A link from a fact to another record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Relation {
    #[serde(rename = "type")]
    pub rel: RelationType,
    pub id: RecordId,
}

/// A 1-based, inclusive line range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LineRange {
    pub start: u32,
    pub end: u32,
}

impl fmt::Display for LineRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.start, self.end)
    }
}

/// A place in the code a record is about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Anchor {
    /// Repository-relative path with `/` separators.
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<LineRange>,
    /// The git blob id of the file when the anchor was written, if it existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// The commit HEAD pointed at when the anchor was written, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// A typed piece of knowledge about the project.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fact {
    #[serde(rename = "type")]
    pub fact_type: FactType,
    pub subject: String,
    pub scope: String,
    pub tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub provenance: Provenance,
    pub confidence: Milli,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<Timestamp>,
    pub depends_on: Vec<RecordId>,
    pub relations: Vec<Relation>,
    pub anchors: Vec<Anchor>,
    /// A code snippet this fact recommends; outcome detection looks for it in later commits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    /// Sections of ingested documents this fact cites.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cites: Vec<Citation>,
}

impl Fact {
    /// A fact of `fact_type` about `subject` in the project area, observed, at confidence 0.7,
    /// with nothing else set: the base that builders and tests fill with `..Fact::new(..)`.
    pub fn new(fact_type: FactType, subject: impl Into<String>) -> Fact {
        Fact {
            fact_type,
            subject: subject.into(),
            scope: "project".into(),
            tags: Vec::new(),
            key: None,
            provenance: Provenance::Observed,
            confidence: Milli(700),
            valid_from: None,
            valid_to: None,
            depends_on: Vec::new(),
            relations: Vec::new(),
            anchors: Vec::new(),
            suggestion: None,
            cites: Vec::new(),
        }
    }
}

impl Anchor {
    /// `PATH[:START-END]` split into the path and the line range (the inverse of
    /// [`Anchor::spec`]); the error says what is wrong with the range. The path is not checked.
    pub fn split_spec(spec: &str) -> Result<(&str, Option<LineRange>), String> {
        match spec.rsplit_once(':') {
            Some((p, range)) if !range.is_empty() && range.chars().all(|c| c.is_ascii_digit() || c == '-') => {
                let (a, b) = range.split_once('-').unwrap_or((range, range));
                match (a.parse::<u32>(), b.parse::<u32>()) {
                    (Ok(start), Ok(end)) if start >= 1 && end >= start => Ok((p, Some(LineRange { start, end }))),
                    _ => Err(format!("{range:?} is not a line range; use PATH:START-END with 1 <= START <= END")),
                }
            }
            _ => Ok((spec, None)),
        }
    }

    /// `PATH` or `PATH:START-END`, as `--anchor` takes it.
    pub fn spec(&self) -> String {
        match &self.lines {
            Some(l) => format!("{}:{l}", self.path),
            None => self.path.clone(),
        }
    }
}

/// A fact's citation of one section of an ingested document (a `source` record).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Citation {
    /// The source record.
    pub id: RecordId,
    /// The section's heading (the document's title for the text before its first heading).
    pub section: String,
}

/// A document of the repository, ingested: a pointer to its text (the blob already in git's
/// history) and its sections, not a copy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Source {
    /// Repository-relative path with `/` separators.
    pub path: String,
    /// The git blob id of the document when it was ingested.
    pub blob: String,
    /// The commit HEAD pointed at then, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Its first level-1 heading, else its file name.
    pub title: String,
    pub sections: Vec<Section>,
}

/// One section of a source: a heading and the lines up to the next heading.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Section {
    pub heading: String,
    /// 1 to 6; 0 for the text before the first heading.
    pub level: u8,
    pub lines: LineRange,
    /// The first 16 hex digits of the BLAKE3 hash of the section's text: a citing fact is flagged
    /// for review when it changes.
    pub hash: String,
}

impl Source {
    /// The section named `heading` (case and surrounding space ignored).
    pub fn section(&self, heading: &str) -> Option<&Section> {
        let want = heading.trim().to_lowercase();
        self.sections.iter().find(|s| s.heading.trim().to_lowercase() == want)
    }
}

/// The check an attempt ran or reported.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub result: CheckResult,
    /// How the result is known: git-neo ran the command (`observed`) or the caller said so.
    pub source: CheckSource,
    /// Exit code, duration and a bounded, secret-filtered tail of the output (observed checks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The commit HEAD pointed at when the attempt was recorded (read by git-neo).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Whether the work tree had uncommitted changes then (read by git-neo).
    pub dirty: bool,
}

impl Check {
    /// No check: `unverified`, with the git state it was recorded in.
    pub fn unverified(commit: Option<String>, dirty: bool) -> Check {
        Check {
            command: None,
            result: CheckResult::Unverified,
            source: CheckSource::None,
            exit_code: None,
            duration_ms: None,
            output: None,
            commit,
            dirty,
        }
    }
}

/// A file an attempt touched, as git-neo saw it when the attempt was recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AffectedFile {
    pub path: String,
    /// The blob id of the file's content (work tree if it differs from HEAD).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// Whether the work-tree file differed from HEAD.
    pub dirty: bool,
}

/// What an agent or person tried on a task, and what came of it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Attempt {
    pub task: String,
    pub action: String,
    pub observation: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inference: Option<String>,
    pub check: Check,
    pub files: Vec<AffectedFile>,
    /// A code snippet the attempt proposes; outcome detection looks for it in later commits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    /// The attempt this one re-checks (`git neo recheck`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_of: Option<RecordId>,
    pub scope: String,
    pub tags: Vec<String>,
}

/// The statement that one record replaces another (or, with no `new`, that it is outdated).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Supersession {
    pub old: RecordId,
    /// The scope `old` lives in, when it is not the scope this record is in (a supersession
    /// asked for across scopes: `project`, `user`, `org` or `session:<name>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<RecordId>,
    pub reason: String,
    pub method: SupersessionMethod,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<Milli>,
}

/// Evidence from the code's history that moves a record's confidence.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outcome {
    pub target: RecordId,
    pub signal: String,
    pub delta: Milli,
    pub commits: Vec<String>,
    pub paths: Vec<String>,
    /// Idempotency key: the same evidence observed twice carries the same key and counts once.
    pub key: String,
}

/// Hides a record from the current state; history keeps it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Retraction {
    pub target: RecordId,
    pub reason: String,
}

/// A procedural lesson as a patch to one of the project's instruction files (see
/// `crate::lesson` for the rules and docs/lessons.md). The body holds why, then the unified diff
/// from `original` to the content whose hash is `after`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Lesson {
    /// The instruction file, repository-relative (`AGENTS.md`, `.claude/skills/x/SKILL.md`, …).
    pub file: String,
    pub change: LessonChange,
    /// BLAKE3 of the file's content the patch was made from, and of what applying it gives.
    pub before: String,
    pub after: String,
    /// The file's whole content the patch was made from (restore writes it back).
    pub original: String,
    /// The records the lesson rests on (facts, failures, attempts).
    pub because: Vec<RecordId>,
    /// One line: what the lesson says and why it was proposed.
    pub reason: String,
}

/// The kind-specific part of a record.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Payload {
    Fact(Fact),
    Attempt(Attempt),
    Supersession(Supersession),
    Outcome(Outcome),
    Retraction(Retraction),
    Source(Source),
    Lesson(Lesson),
}

/// One memory record, as typed data.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Record {
    pub kind: Kind,
    #[serde(flatten)]
    pub payload: Payload,
    /// `Name <email>` of whoever wrote the record.
    pub author: String,
    pub created_at: Timestamp,
    /// The markdown body after the front matter, LF line endings, empty or ending in one `\n`.
    pub body: String,
}

impl Record {
    /// A one-line summary for listings and commit messages.
    pub fn summary(&self) -> String {
        match &self.payload {
            Payload::Fact(f) => f.subject.clone(),
            Payload::Attempt(a) => format!("{}: {}", a.task, a.action),
            Payload::Supersession(s) => match &s.new {
                Some(new) => format!("{} -> {}: {}", s.old.short(), new.short(), s.reason),
                None => format!("{} outdated: {}", s.old.short(), s.reason),
            },
            Payload::Outcome(o) => format!("{} {} {}", o.target.short(), o.signal, o.delta),
            Payload::Retraction(r) => format!("forget {}: {}", r.target.short(), r.reason),
            Payload::Source(s) => format!("{} ({})", s.title, s.path),
            Payload::Lesson(l) => format!("lesson for {}: {}", l.file, l.reason),
        }
    }

    /// The length of [`Record::summary`], without building it for a fact (recall sizes every
    /// constraint of a memory against its budget on every call).
    pub fn summary_len(&self) -> usize {
        match &self.payload {
            Payload::Fact(f) => f.subject.len(),
            _ => self.summary().len(),
        }
    }

    /// The source payload, if this record is an ingested document.
    pub fn as_source(&self) -> Option<&Source> {
        match &self.payload {
            Payload::Source(s) => Some(s),
            _ => None,
        }
    }

    /// The lesson payload, if this record is a lesson patch.
    pub fn as_lesson(&self) -> Option<&Lesson> {
        match &self.payload {
            Payload::Lesson(l) => Some(l),
            _ => None,
        }
    }

    /// The fact payload, if this record is a fact.
    pub fn as_fact(&self) -> Option<&Fact> {
        match &self.payload {
            Payload::Fact(f) => Some(f),
            _ => None,
        }
    }

    /// Every record id this record names, with the field naming it.
    pub fn references(&self) -> Vec<(&'static str, RecordId)> {
        match &self.payload {
            Payload::Fact(f) => f
                .depends_on
                .iter()
                .map(|d| ("depends_on", *d))
                .chain(f.relations.iter().map(|r| ("relations", r.id)))
                .chain(f.cites.iter().map(|c| ("cites", c.id)))
                .collect(),
            Payload::Attempt(a) => a.retry_of.map(|r| ("retry_of", r)).into_iter().collect(),
            Payload::Supersession(s) => std::iter::once(("old", s.old)).chain(s.new.map(|n| ("new", n))).collect(),
            Payload::Outcome(o) => vec![("target", o.target)],
            Payload::Retraction(r) => vec![("target", r.target)],
            Payload::Source(_) => Vec::new(),
            Payload::Lesson(l) => l.because.iter().map(|b| ("because", *b)).collect(),
        }
    }

    /// Canonical bytes and their id: what gets written.
    pub fn encode(&self) -> (RecordId, Vec<u8>) {
        let bytes = canonical::to_bytes(self);
        (RecordId::of_bytes(&bytes), bytes)
    }

    /// The path of a record of `kind` with `id` on the memory ref: `facts/3f/3f2a….md`.
    pub fn path(kind: Kind, id: &RecordId) -> String {
        let hex = id.to_hex();
        format!("{}/{}/{}.md", kind.dir(), &hex[..2], hex)
    }
}
