//! Updates nobody labelled, end to end: the frame rule never hides a true fact (identity markers,
//! whole subject phrases), decides the same for `add` and `import`, hints only about the same
//! thing, attaches a key on re-add, and `git neo repair` reverts what an older rule superseded.

use crate::support::{json, stderr, Sandbox};
use serde_json::Value;
use std::path::Path;

fn add(sb: &Sandbox, repo: &Path, now: &str, args: &[&str]) -> Value {
    let mut cmd = sb.neo_cmd(repo);
    cmd.env("GIT_NEO_EMBEDDER", "hash").env("GIT_NEO_NOW", now).args(["add", "--json"]).args(args);
    let out = cmd.output().expect("run git-neo");
    assert!(out.status.success(), "git neo add {args:?}: {}", stderr(&out));
    json(&String::from_utf8_lossy(&out.stdout))
}

fn valid_subjects(sb: &Sandbox, repo: &Path) -> Vec<String> {
    let list = json(&sb.neo_ok(repo, &["list", "--type", "decision", "--json"]));
    let mut out: Vec<String> = list
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|r| r["record"]["subject"].as_str().map(str::to_string))
        .collect();
    out.sort();
    out
}

/// Write, with git plumbing as an older rule did, a frame supersession of `old` by `new` (both
/// `add --json` replies): the record id.
fn old_rule_supersession(repo: &Path, old: &Value, new: &Value, reason: &str) -> git_neo::record::RecordId {
    use git_neo::record::{Kind, Payload, Record, RecordId, Supersession, SupersessionMethod, Timestamp};
    let id = |v: &Value| RecordId::from_hex(v["id"].as_str().expect("id")).expect("hex");
    let rec = Record {
        kind: Kind::Supersession,
        payload: Payload::Supersession(Supersession {
            old: id(old),
            old_scope: None,
            new: Some(id(new)),
            reason: reason.into(),
            method: SupersessionMethod::Frame,
            score: None,
        }),
        author: "Ada Tester <ada@example.com>".into(),
        created_at: Timestamp(1_772_400_000),
        body: String::new(),
    };
    let store = git_neo::store::Store::discover(repo, git_neo::store::StoreOptions::default()).expect("store");
    let (sid, bytes) = rec.encode();
    let who = git_neo::store::Identity { name: "Ada Tester".into(), email: "ada@example.com".into() };
    store.write_records(&[(rec.kind, sid, bytes)], "neo: old rule", &who, rec.created_at, false).expect("write");
    sid
}

fn at(i: usize) -> String {
    format!("2026-03-01T{:02}:{:02}:00Z", 10 + i / 60, i % 60)
}

/// The defects that made the old rule hide true facts: none of these is superseded, and none is
/// even offered as a possible update, since none is about the same thing.
#[test]
fn neighbours_are_never_superseded_nor_hinted() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let pairs = [
        ("The billing service uses Postgres 14", "The analytics service uses Postgres 14"),
        ("PR reviews need two approvals in the core repo", "PR reviews need one approval in the docs repo"),
        ("The search index is rebuilt every night at 02:00 UTC", "The sitemap is rebuilt every night at 03:00 UTC"),
        ("decision number 1 about the caching layer", "decision number 2 about the caching layer"),
        (
            "[D1:3] Caroline: I went to a support group yesterday",
            "[D1:9] Caroline: I went to a pottery class yesterday",
        ),
    ];
    for (i, (old, new)) in pairs.iter().enumerate() {
        add(&sb, &repo, &at(2 * i), &["-t", "decision", "-s", old]);
        let out = add(&sb, &repo, &at(2 * i + 1), &["-t", "decision", "-s", new]);
        assert!(out["superseded"].is_null(), "{old} / {new}: {out}");
        assert!(out["possible_updates"].is_null(), "{old} / {new}: {out}");
    }
    assert_eq!(valid_subjects(&sb, &repo).len(), 10);
}

/// A conversation stored turn by turn keeps every turn, and the same lines imported end in the
/// same state; an update of one thing is made by both ways in, and import reports it.
#[test]
fn add_and_import_decide_alike() {
    let sb = Sandbox::new();
    let mut lines: Vec<String> = Vec::new();
    let speakers = ["Caroline", "Melanie"];
    for t in 1..=40 {
        let s = speakers[t % 2];
        lines
            .push(format!("[D1:{t}] {s}: I went to the {} meeting on day {t} and it was fine", ["book", "art"][t % 2]));
    }
    lines.push("Mobile Team allocated to Project Phoenix".into());
    lines.push("Mobile Team reallocated to Project Alpha".into());
    lines.push("The billing service uses Postgres 14".into());
    lines.push("The billing service uses Postgres 15".into());
    lines.push("The analytics service uses Postgres 15".into());

    let one = sb.repo("one");
    for (i, l) in lines.iter().enumerate() {
        add(&sb, &one, &at(i), &["-t", "decision", "-s", l]);
    }
    let two = sb.repo("two");
    let jsonl: String =
        lines.iter().map(|l| serde_json::json!({"type": "decision", "subject": l}).to_string() + "\n").collect();
    std::fs::write(sb.path("lines.jsonl"), jsonl).expect("write lines");
    let mut cmd = sb.neo_cmd(&two);
    cmd.env("GIT_NEO_NOW", at(0)).args(["import", sb.path("lines.jsonl").to_str().expect("utf-8"), "--json"]);
    let out = cmd.output().expect("import");
    assert!(out.status.success(), "{}", stderr(&out));
    let imported = json(&String::from_utf8_lossy(&out.stdout));
    let superseded: Vec<&str> = imported["superseded"]
        .as_array()
        .expect("import reports supersessions")
        .iter()
        .filter_map(|s| s["subject"].as_str())
        .collect();
    assert_eq!(superseded, ["Mobile Team allocated to Project Phoenix", "The billing service uses Postgres 14"]);

    let (a, b) = (valid_subjects(&sb, &one), valid_subjects(&sb, &two));
    assert_eq!(a, b, "the same lines end in the same state");
    assert_eq!(a.len(), lines.len() - 2, "every turn kept; two updates made");
    assert!(!a.iter().any(|s| s.contains("Project Phoenix") || s.contains("Postgres 14")), "{a:?}");
}

/// Re-adding a stored fact with a key records the key, so the next fact with that key replaces
/// it; the same thing in another area is a second fact, never replaced, and the writer is told.
#[test]
fn a_key_attaches_on_re_add_and_another_area_is_told_not_replaced() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let first = add(&sb, &repo, &at(0), &["-t", "decision", "-s", "Deploys go to Heroku"]);
    let again = add(&sb, &repo, &at(1), &["-t", "decision", "-s", "Deploys go to Heroku", "--key", "deploy.target"]);
    assert_eq!(again["deduplicated"], false, "{again}");
    assert_eq!(again["superseded"][0]["old"], first["id"], "{again}");
    assert_eq!(again["superseded"][0]["method"], "key");
    let shown = json(&sb.neo_ok(&repo, &["show", &again["id"].as_str().expect("id")[..12], "--json"]));
    assert!(shown["text"].as_str().is_some_and(|t| t.contains("key: \"deploy.target\"")), "{shown}");
    let next = add(&sb, &repo, &at(2), &["-t", "decision", "-s", "Deploys go to Fly.io", "--key", "deploy.target"]);
    assert_eq!(next["superseded"][0]["old"], again["id"], "{next}");
    assert_eq!(valid_subjects(&sb, &repo), ["Deploys go to Fly.io"]);

    // In one area, the update is made, and its record names the thing, predicate and values.
    add(&sb, &repo, &at(3), &["-t", "decision", "-s", "The deploy target is Heroku", "--area", "release"]);
    let moved = add(&sb, &repo, &at(4), &["-t", "decision", "-s", "The deploy target is Fly.io", "--area", "release"]);
    assert_eq!(moved["superseded"][0]["method"], "frame", "{moved}");
    let reason = moved["superseded"][0]["reason"].as_str().expect("reason");
    assert!(reason.contains("same thing \"deploy target\"") && reason.contains("[heroku] -> [fly.io]"), "{reason}");
    // Areas are kept apart, as keys keep them: the same thing in another area is a second fact,
    // and the writer is told it exists.
    let other = add(&sb, &repo, &at(5), &["-t", "decision", "-s", "The deploy target is Render", "--area", "infra"]);
    assert!(other["superseded"].is_null(), "{other}");
    assert_eq!(other["possible_updates"][0]["id"], moved["id"], "{other}");
    assert!(other["possible_updates"][0]["why"].as_str().is_some_and(|w| w.contains("area \"release\"")), "{other}");
}

/// A supersession an older rule made by the frame ("same postgres") is listed by `git neo
/// repair`, which reverts it (a dry run first writes nothing); one today's rule makes is kept.
#[test]
fn repair_reverts_what_the_old_rule_superseded() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let billing = add(&sb, &repo, &at(0), &["-t", "decision", "-s", "The billing service uses Postgres 14"]);
    let analytics = add(&sb, &repo, &at(1), &["-t", "decision", "-s", "The analytics service uses Postgres 14"]);
    let team = add(&sb, &repo, &at(2), &["-t", "decision", "-s", "Mobile Team allocated to Project Phoenix"]);
    let moved = add(&sb, &repo, &at(3), &["-t", "decision", "-s", "Mobile Team reallocated to Project Alpha"]);
    assert_eq!(moved["superseded"][0]["old"], team["id"], "today's rule makes this one: {moved}");
    // What the old rule wrote for billing -> analytics.
    let sid = old_rule_supersession(
        &repo,
        &billing,
        &analytics,
        "update noticed by its frame: same postgres; names [billing] -> [analytics]",
    );
    assert_eq!(valid_subjects(&sb, &repo).len(), 2, "billing hidden by the old rule");

    let tip = sb.tip(&repo);
    let dry = json(&sb.neo_ok(&repo, &["repair", "--dry-run", "--json"]));
    assert_eq!(dry["reverted"], 1, "{dry}");
    assert_eq!(sb.tip(&repo), tip, "a dry run writes nothing");
    let listed = dry["supersessions"].as_array().expect("listed");
    assert_eq!(listed.len(), 2, "every automatic supersession is listed: {dry}");
    let old = listed.iter().find(|s| s["id"] == sid.to_hex()).expect("the old rule's");
    assert_eq!((old["holds"].as_bool(), old["verdict"].as_str()), (Some(false), Some("different things")), "{dry}");
    assert!(listed.iter().any(|s| s["holds"] == true), "{dry}");

    let done = json(&sb.neo_ok(&repo, &["repair", "--json"]));
    assert_eq!(done["reverted"], 1, "{done}");
    assert_ne!(sb.tip(&repo), tip);
    let now = valid_subjects(&sb, &repo);
    assert!(now.contains(&"The billing service uses Postgres 14".to_string()), "{now:?}");
    assert!(!now.iter().any(|s| s.contains("Project Phoenix")), "{now:?}");
    assert_eq!(json(&sb.neo_ok(&repo, &["repair", "--json"]))["reverted"], 0, "nothing left to repair");
}

/// Updates written the way people write them are caught through `add`, and failures and reviews
/// about one component are events: imported together, none replaces another, and recall marks no
/// conflict between them.
#[test]
fn plain_language_updates_are_caught_and_events_stay_events() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let mut i = 0;
    for (old, new) in [
        ("The search cluster runs Elasticsearch 7", "The search cluster was upgraded to Elasticsearch 8"),
        ("The API quota is 1000 requests per minute", "The API quota was raised to 5000 requests per minute"),
        ("The CI pipeline uses Jenkins", "The CI pipeline switched from Jenkins to GitHub Actions"),
    ] {
        let first = add(&sb, &repo, &at(i), &["-t", "decision", "-s", old]);
        let second = add(&sb, &repo, &at(i + 1), &["-t", "decision", "-s", new]);
        i += 2;
        let superseded: Vec<&str> =
            second["superseded"].as_array().into_iter().flatten().filter_map(|s| s["old"].as_str()).collect();
        assert_eq!(superseded, [first["id"].as_str().expect("id")], "{old} -> {new}: {second}");
    }

    let events = [
        ("failure", "The CLI argument parser returns stale data when a batch exceeds ten thousand rows"),
        ("failure", "The CLI argument parser returns HTTP 500 instead of 404 when the network flaps briefly"),
        ("failure", "The CLI argument parser returns HTTP 500 instead of 404 when the network flaps for long"),
        ("review", "Review note on src/db/cache.py: inventory sync reorders items after pagination"),
        ("review", "Review note on src/db/cache.py: email renderer emits duplicate events"),
        ("review", "Review note on src/db/cache.py: the cache holds stale prices"),
    ];
    let lines: String =
        events.iter().map(|(t, s)| format!("{}\n", serde_json::json!({"type": t, "subject": s}))).collect();
    let file = sb.path("events.jsonl");
    std::fs::write(&file, lines).expect("write");
    let out = sb.neo(&repo, &["import", &file.to_string_lossy(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let imported = json(&String::from_utf8_lossy(&out.stdout));
    assert!(imported["superseded"].as_array().is_none_or(|a| a.is_empty()), "{imported}");
    // One by one through `add`: the same, and nothing is even offered as a possible update.
    let one = add(
        &sb,
        &repo,
        &at(20),
        &["-t", "failure", "-s", "The CLI argument parser returns stale data when the cache is cold"],
    );
    assert!(one["superseded"].as_array().is_none_or(|a| a.is_empty()), "{one}");
    assert!(one["possible_updates"].as_array().is_none_or(|a| a.is_empty()), "{one}");
    let r = json(&sb.neo_ok(&repo, &["recall", "CLI argument parser cache.py review", "-k", "20", "--json"]));
    for f in r["facts"].as_array().expect("facts") {
        assert!(f["conflicts_with"].is_null(), "events are not answers that conflict: {f}");
    }
}

/// An older rule superseded reviews by their headline; `repair` reverts every such supersession.
#[test]
fn repair_reverts_a_review_the_old_rule_replaced() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let s1 = "Review note on src/db/cache.py: inventory sync reorders items after pagination";
    let s2 = "Review note on src/db/cache.py: email renderer emits duplicate events";
    let first = add(&sb, &repo, &at(0), &["-t", "review", "-s", s1]);
    let second = add(&sb, &repo, &at(1), &["-t", "review", "-s", s2]);
    old_rule_supersession(
        &repo,
        &first,
        &second,
        "update noticed by its frame: same thing \"review note src/db/cache.py\"",
    );
    let dry = json(&sb.neo_ok(&repo, &["repair", "--dry-run", "--json"]));
    let listed = dry["supersessions"].as_array().expect("listed");
    assert_eq!(listed.len(), 1, "{dry}");
    assert_eq!(listed[0]["holds"], false, "{dry}");
    assert!(listed[0]["verdict"].as_str().is_some_and(|v| v.contains("events are not states")), "{dry}");
    assert_eq!(json(&sb.neo_ok(&repo, &["repair", "--json"]))["reverted"], 1);
    let reviews = json(&sb.neo_ok(&repo, &["list", "--type", "review", "--json"]));
    assert_eq!(reviews.as_array().expect("list").len(), 2, "both reviews are current again: {reviews}");
}
