//! The record format: canonical bytes pinned by snapshots, identity, and the parser's problem lists.

use git_neo::record::{
    parse::parse, AffectedFile, Anchor, Attempt, Check, CheckResult, CheckSource, Fact, FactType, Kind, LineRange,
    Milli, Outcome, Payload, Provenance, Record, RecordId, Relation, RelationType, Retraction, Supersession,
    SupersessionMethod, Timestamp,
};

fn id(c: char) -> RecordId {
    RecordId::from_hex(&c.to_string().repeat(64)).expect("valid hex")
}

fn base(kind: Kind, payload: Payload, body: &str) -> Record {
    Record {
        kind,
        payload,
        author: "Ada Tester <ada@example.com>".into(),
        created_at: Timestamp::parse("2026-03-01T12:00:00Z").expect("valid time"),
        body: body.into(),
    }
}

pub fn full_fact() -> Record {
    base(
        Kind::Fact,
        Payload::Fact(Fact {
            fact_type: FactType::Constraint,
            subject: "Never call the \"payments\" API from tests: use the fake".into(),
            scope: "payments".into(),
            tags: vec!["payments".into(), "testing".into()],
            key: Some("payments api in tests".into()),
            provenance: Provenance::Observed,
            confidence: Milli(750),
            valid_from: Timestamp::parse("2026-01-01"),
            valid_to: None,
            depends_on: vec![id('a')],
            relations: vec![Relation { rel: RelationType::Extends, id: id('b') }],
            anchors: vec![Anchor {
                path: "src/pay.rs".into(),
                lines: Some(LineRange { start: 10, end: 20 }),
                blob: Some("c".repeat(40)),
                commit: Some("d".repeat(40)),
            }],
            suggestion: Some("let pay = FakePayments::new();\npay.charge(100)?;".into()),
            cites: Vec::new(),
        }),
        "The sandbox bills real cards.\n\n- use `FakePayments`\n",
    )
}

const FULL_FACT: &str = r#"---
neo: 1
kind: fact
type: constraint
subject: "Never call the \"payments\" API from tests: use the fake"
scope: "payments"
tags: ["payments", "testing"]
key: "payments api in tests"
provenance: observed
confidence: 0.75
valid_from: "2026-01-01T00:00:00Z"
depends_on: ["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]
relations:
  - type: extends
    id: "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
anchors:
  - path: "src/pay.rs"
    lines: "10-20"
    blob: "cccccccccccccccccccccccccccccccccccccccc"
    commit: "dddddddddddddddddddddddddddddddddddddddd"
suggestion: "let pay = FakePayments::new();\npay.charge(100)?;"
author: "Ada Tester <ada@example.com>"
created_at: "2026-03-01T12:00:00Z"
---
The sandbox bills real cards.

- use `FakePayments`
"#;

fn snapshots() -> Vec<(Record, &'static str)> {
    vec![
        (full_fact(), FULL_FACT),
        (
            base(
                Kind::Attempt,
                Payload::Attempt(Attempt {
                    task: "T-12".into(),
                    action: "Switched the retry loop to exponential backoff".into(),
                    observation: "flaky test passed 50/50 runs\nbefore: 41/50".into(),
                    inference: Some("the race was in the retry timing".into()),
                    check: Check {
                        command: Some("cargo test -p net".into()),
                        result: CheckResult::Passed,
                        source: CheckSource::Observed,
                        exit_code: Some(0),
                        duration_ms: Some(5120),
                        output: Some("test result: ok. 50 passed".into()),
                        commit: Some("e".repeat(40)),
                        dirty: false,
                    },
                    files: vec![AffectedFile { path: "src/net.rs".into(), blob: Some("f".repeat(40)), dirty: false }],
                    suggestion: None,
                    retry_of: None,
                    scope: "project".into(),
                    tags: vec![],
                }),
                "",
            ),
            r#"---
neo: 1
kind: attempt
task: "T-12"
action: "Switched the retry loop to exponential backoff"
observation: "flaky test passed 50/50 runs\nbefore: 41/50"
inference: "the race was in the retry timing"
check:
  command: "cargo test -p net"
  result: passed
  source: observed
  exit_code: 0
  duration_ms: 5120
  output: "test result: ok. 50 passed"
  commit: "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
  dirty: false
files:
  - path: "src/net.rs"
    blob: "ffffffffffffffffffffffffffffffffffffffff"
    dirty: false
scope: "project"
author: "Ada Tester <ada@example.com>"
created_at: "2026-03-01T12:00:00Z"
---
"#,
        ),
        (
            base(
                Kind::Supersession,
                Payload::Supersession(Supersession {
                    old: id('1'),
                    old_scope: None,
                    new: Some(id('2')),
                    reason: "deploy target moved".into(),
                    method: SupersessionMethod::Key,
                    score: None,
                }),
                "",
            ),
            r#"---
neo: 1
kind: supersession
old: "1111111111111111111111111111111111111111111111111111111111111111"
new: "2222222222222222222222222222222222222222222222222222222222222222"
reason: "deploy target moved"
method: key
author: "Ada Tester <ada@example.com>"
created_at: "2026-03-01T12:00:00Z"
---
"#,
        ),
        (
            base(
                Kind::Outcome,
                Payload::Outcome(Outcome {
                    target: id('3'),
                    signal: "regression".into(),
                    delta: Milli(-50),
                    commits: vec!["f".repeat(40)],
                    paths: vec!["src/a.rs".into()],
                    key: "3333:ffff:regression".into(),
                }),
                "",
            ),
            r#"---
neo: 1
kind: outcome
target: "3333333333333333333333333333333333333333333333333333333333333333"
signal: "regression"
delta: -0.05
commits: ["ffffffffffffffffffffffffffffffffffffffff"]
paths: ["src/a.rs"]
key: "3333:ffff:regression"
author: "Ada Tester <ada@example.com>"
created_at: "2026-03-01T12:00:00Z"
---
"#,
        ),
        (
            base(
                Kind::Retraction,
                Payload::Retraction(Retraction { target: id('4'), reason: "was never true".into() }),
                "",
            ),
            r#"---
neo: 1
kind: retraction
target: "4444444444444444444444444444444444444444444444444444444444444444"
reason: "was never true"
author: "Ada Tester <ada@example.com>"
created_at: "2026-03-01T12:00:00Z"
---
"#,
        ),
    ]
}

#[test]
fn canonical_bytes_are_pinned_and_round_trip() {
    for (record, expected) in snapshots() {
        let (rid, bytes) = record.encode();
        let text = String::from_utf8(bytes.clone()).expect("canonical bytes are UTF-8");
        assert_eq!(text, expected, "canonical form of a {} changed", record.kind);
        assert_eq!(rid, RecordId::of_bytes(expected.as_bytes()), "the id is the BLAKE3 of the bytes");
        let parsed = parse(&bytes).unwrap_or_else(|p| panic!("canonical {} does not parse: {p}", record.kind));
        assert_eq!(parsed, record, "parse(encode(r)) == r for {}", record.kind);
    }
}

#[test]
fn the_worked_example_in_docs_format_md_is_exact() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/format.md")).expect("read docs/format.md");
    assert!(doc.contains(FULL_FACT), "docs/format.md must contain the pinned worked example byte for byte");
    let (rid, _) = full_fact().encode();
    assert!(doc.contains(&rid.to_hex()), "docs/format.md must state the worked example's id {rid}");
}

#[test]
fn parsing_never_reserialises_a_hand_written_record() {
    // Plain scalars, different field order, no quotes: valid, and its id is the hash of these bytes.
    let hand = "---\nkind: fact\nneo: 1\nsubject: Use rustls, not openssl\ntype: decision\nscope: build\nprovenance: inferred\nconfidence: 0.5\nauthor: Bo <bo@example.com>\ncreated_at: \"2026-02-02T02:02:02Z\"\n---\nbody\n";
    let record = parse(hand.as_bytes()).expect("hand-written record parses");
    assert_eq!(record.as_fact().map(|f| f.subject.as_str()), Some("Use rustls, not openssl"));
    let (canonical_id, canonical) = record.encode();
    assert_ne!(canonical, hand.as_bytes(), "the canonical form differs from the hand-written bytes");
    assert_ne!(canonical_id, RecordId::of_bytes(hand.as_bytes()));
}

/// Data-driven: (file text, every field that must be named in the problems).
#[test]
fn every_problem_is_reported_with_its_field() {
    let cases: &[(&str, &[&str])] = &[
        ("no fence\n", &["file"]),
        ("---\nneo: 1\nkind: fact\n", &["file"]),
        ("---\nneo: 1\nkind: rumour\nauthor: \"a\"\ncreated_at: \"2026-01-01T00:00:00Z\"\n---\n", &["kind"]),
        (
            "---\nneo: 1\nkind: fact\ntype: vibe\nsubject: \"\"\nscope: \"p\"\nprovenance: guessed\nconfidence: 2\ncolour: red\nauthor: \"a\"\ncreated_at: \"yesterday\"\n---\n",
            &["type", "subject", "provenance", "confidence", "colour", "created_at"],
        ),
        (
            "---\nneo: 1\nkind: fact\ntype: decision\nsubject: \"\"\nscope: \"p\"\nprovenance: observed\nconfidence: 1.5\ntags: [\"Bad Tag\"]\nanchors:\n  - path: \"/etc/passwd\"\n  - path: \"../x\"\n    lines: \"9-3\"\nauthor: \"a\"\ncreated_at: \"2026-01-01T00:00:00Z\"\n---\nok\n---\nnot ok\n",
            &["subject", "confidence", "tags[0]", "anchors[0].path", "anchors[1].path", "anchors[1].lines", "body"],
        ),
        ("---\nneo: 2\nkind: retraction\ntarget: \"abc\"\nreason: \"r\"\nauthor: \"a\"\ncreated_at: \"2026-01-01T00:00:00Z\"\n---\n", &["neo", "target"]),
        ("---\nneo: 1\nkind: fact\nsubject: [1, 2]\n: :\n---\n", &["front matter"]),
    ];
    for (text, fields) in cases {
        let problems = parse(text.as_bytes()).expect_err(&format!("must be rejected: {text}")).0;
        for field in *fields {
            assert!(
                problems.iter().any(|p| p.field == *field),
                "no problem names {field:?} for {text:?}; got {problems:?}"
            );
        }
        for p in &problems {
            assert!(!p.message.is_empty());
        }
    }
}

#[test]
fn invalid_utf8_is_a_named_problem() {
    let mut bytes = FULL_FACT.as_bytes().to_vec();
    bytes.insert(30, 0xff);
    let problems = parse(&bytes).expect_err("invalid UTF-8").0;
    assert_eq!(problems[0].field, "file");
    assert!(problems[0].message.contains("UTF-8"));
}

#[test]
fn fixture_records_parse_as_their_directory_says() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/records");
    let mut seen = 0;
    for (dir, valid) in [("valid", true), ("invalid", false)] {
        for entry in std::fs::read_dir(root.join(dir)).expect("fixtures/records exists") {
            let path = entry.expect("dir entry").path();
            let bytes = std::fs::read(&path).expect("read fixture");
            assert_eq!(
                parse(&bytes).is_ok(),
                valid,
                "{} should be {}",
                path.display(),
                if valid { "valid" } else { "invalid" }
            );
            seen += 1;
        }
    }
    assert!(seen >= 4, "fixtures are present");
}

/// The fast canonical reader must agree with the YAML parser on everything the writer emits,
/// including strings full of YAML syntax, escapes and non-ASCII text.
#[test]
fn the_fast_reader_agrees_with_yaml_on_canonical_output() {
    use git_neo::record::{fast, parse::split};
    let nasty = [
        "plain",
        "a: b",
        "# not a comment",
        "\"quoted\" and \\ back",
        "tab\there",
        "[x], {y}",
        "&anchor *alias !tag",
        "|pipe >fold",
        "- dash",
        "'single'",
        "null",
        "true",
        "0.5",
        "01",
        "漢字 é ü",
        "emoji 🦀",
        "trailing \\",
        "%percent @at `tick`",
        "k: v # c",
    ];
    let mut records = snapshots().into_iter().map(|(r, _)| r).collect::<Vec<_>>();
    for (i, s) in nasty.iter().enumerate() {
        let mut r = full_fact();
        if let Payload::Fact(f) = &mut r.payload {
            f.subject = format!("{s} {i}");
            f.scope = s.to_string();
            f.key = Some(format!("{s}\u{a0}{s}"));
        }
        r.author = format!("{s} <x@example.com>");
        records.push(r);
    }
    for r in records {
        let (_, bytes) = r.encode();
        let text = String::from_utf8(bytes.clone()).expect("utf-8");
        let (front, _) = split(&text).expect("fences");
        let fast = fast::front_matter(front)
            .unwrap_or_else(|| panic!("canonical front matter must take the fast path:\n{front}"));
        let slow: serde_yaml::Value = serde_yaml::from_str(front).expect("valid YAML");
        assert_eq!(serde_yaml::Value::Mapping(fast), slow, "{front}");
        // (Tabs are refused in one-line fields, so only valid records must parse back.)
        if git_neo::record::validate::validate(&r).is_empty() {
            assert_eq!(parse(&bytes).expect("parses"), r);
        }
    }
}
