//! Property tests for the record parser: any bytes are answered with a record or a list of
//! problems (never a panic), every valid record survives the trip through its canonical bytes,
//! and a record damaged anywhere either parses to something whose canonical form is stable, or
//! is refused.
//! Kept to a few hundred cases each so the suite stays fast.

use git_neo::record::canonical::{normalize_body, to_bytes};
use git_neo::record::parse::parse;
use git_neo::record::validate::validate;
use git_neo::record::{Anchor, Fact, FactType, Kind, LineRange, Milli, Payload, Provenance, Record, Timestamp};
use proptest::prelude::*;

/// A fixed seed, so the suite is the same on every machine (a seed that finds something is a new
/// test case, not a flaky run); `PROPTEST_RNG_SEED` is ignored on purpose.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x6e65_6f31),
        ..ProptestConfig::default()
    }
}

/// One line of the kind people write: letters, digits, YAML's special characters, quotes,
/// backslashes and non-ASCII.
fn line() -> impl Strategy<Value = String> {
    proptest::string::string_regex(
        r#"[A-Za-z0-9 "'\\:#!&*,\[\]{}|>%@`~\-éü中🙂]{0,59}[A-Za-z0-9"'\\:#!&*,\[\]{}|>%@`~\-éü中🙂]"#,
    )
    .unwrap()
}

/// A line of a body, where tabs may appear too.
fn body_line() -> impl Strategy<Value = String> {
    proptest::string::string_regex(r#"[A-Za-z0-9 "'\\:#!&*,\[\]{}|>%@`~\-éü中🙂\t]{0,60}"#).unwrap()
}

fn fact() -> impl Strategy<Value = Record> {
    (
        proptest::sample::select(FactType::ALL.to_vec()),
        line(),
        proptest::collection::vec(proptest::string::string_regex("[a-z][a-z0-9-]{0,12}").unwrap(), 0..4),
        proptest::option::of(line()),
        0i32..=1000,
        proptest::collection::vec(
            ("[a-z]{1,8}(/[a-z]{1,8}){0,2}\\.rs", proptest::option::of((1u32..50, 0u32..50))),
            0..3,
        ),
        proptest::collection::vec(body_line(), 0..5),
    )
        .prop_map(|(fact_type, subject, tags, key, confidence, anchors, body)| {
            let mut tags = tags;
            tags.sort();
            tags.dedup();
            Record {
                kind: Kind::Fact,
                payload: Payload::Fact(Fact {
                    subject: subject.trim().to_string(),
                    tags,
                    key: key.map(|k| k.trim().to_lowercase()).filter(|k| !k.is_empty()),
                    provenance: Provenance::Observed,
                    confidence: Milli(confidence),
                    anchors: anchors
                        .into_iter()
                        .map(|(path, lines)| Anchor {
                            path,
                            lines: lines.map(|(start, len)| LineRange { start, end: start + len }),
                            blob: None,
                            commit: None,
                        })
                        .collect(),
                    ..Fact::new(fact_type, "")
                }),
                author: "Ada Tester <ada@example.com>".into(),
                created_at: Timestamp::parse("2026-03-01T12:00:00Z").unwrap(),
                body: body.join("\n"),
            }
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_bytes_get_a_record_or_problems(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = parse(&bytes);
        let mut framed = b"---\n".to_vec();
        framed.extend_from_slice(&bytes);
        framed.extend_from_slice(b"\n---\n");
        let _ = parse(&framed);
    }

    #[test]
    fn any_yaml_like_front_matter_gets_a_record_or_problems(
        lines in proptest::collection::vec((proptest::sample::select(vec!["kind", "type", "subject", "tags", "neo", "anchors", "confidence", "x"]), line()), 0..12)
    ) {
        let mut text = String::from("---\n");
        for (k, v) in lines {
            text.push_str(&format!("{k}: {v}\n"));
        }
        text.push_str("---\nbody\n");
        let _ = parse(text.as_bytes());
    }

    #[test]
    fn a_valid_record_survives_its_canonical_bytes(record in fact()) {
        prop_assume!(validate(&record).is_empty());
        let bytes = to_bytes(&record);
        let back = parse(&bytes).map_err(|p| TestCaseError::fail(format!("{p:?}\n{}", String::from_utf8_lossy(&bytes))))?;
        let mut want = record.clone();
        want.body = normalize_body(&record.body);
        prop_assert_eq!(&back, &want);
        prop_assert_eq!(to_bytes(&back), bytes, "canonical bytes are a fixed point");
    }

    #[test]
    fn a_damaged_record_is_refused_or_parses_to_a_stable_record(
        record in fact(),
        at in any::<proptest::sample::Index>(),
        byte in any::<u8>(),
        how in 0u8..3,
    ) {
        let mut bytes = to_bytes(&record);
        let i = at.index(bytes.len());
        match how {
            0 => bytes[i] = byte,
            1 => bytes.insert(i, byte),
            _ => { bytes.remove(i); }
        }
        if let Ok(parsed) = parse(&bytes) {
            // What parses re-renders canonically (its body normalised) and reads back the same.
            let again = parse(&to_bytes(&parsed)).map_err(|p| TestCaseError::fail(format!("{p:?}")))?;
            let mut want = parsed.clone();
            want.body = normalize_body(&parsed.body);
            prop_assert_eq!(again, want);
        }
    }
}
