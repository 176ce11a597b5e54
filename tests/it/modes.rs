//! `git config neo.mode`: auto writes directly, review stages writes for approve/reject, off refuses.

use crate::support::{json, stderr, Sandbox};

#[test]
fn review_mode_stages_writes_until_approved_or_rejected() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", "Written before review mode"]);
    let tip = sb.tip(&repo);
    sb.git(&repo, &["config", "neo.mode", "review"]);
    let out = sb.neo(&repo, &["add", "-t", "decision", "-s", "Use Postgres 16"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("proposed"), "{}", stderr(&out));
    let a = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let b = sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Drop the Redis cache"]);
    let c = sb.neo_ok(&repo, &["add", "-t", "review", "-s", "Prefer smaller PRs"]);
    assert_eq!(sb.tip(&repo), tip, "the memory ref does not move in review mode");
    // Adding a pending proposal again is a duplicate of the proposal.
    let dup = json(&sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "use postgres 16", "--json"]));
    assert_eq!(
        (dup["deduplicated"].clone(), dup["proposed"].clone(), dup["id"].clone()),
        (true.into(), true.into(), a.clone().into())
    );
    let pending = json(&sb.neo_ok(&repo, &["list", "--proposed", "--json"]));
    assert_eq!(pending.as_array().map(|p| p.len()), Some(3));
    assert!(!sb.neo_ok(&repo, &["list"]).contains(&a[..12]), "proposals are not memory yet");

    sb.neo_ok(&repo, &["approve", &a[..8], &c[..8]]);
    sb.neo_ok(&repo, &["reject", &b[..8]]);
    let listed = sb.neo_ok(&repo, &["list"]);
    assert!(listed.contains(&a[..12]) && listed.contains(&c[..12]) && !listed.contains(&b[..12]), "{listed}");
    assert_eq!(json(&sb.neo_ok(&repo, &["list", "--proposed", "--json"])).as_array().map(|p| p.len()), Some(0));
    assert_eq!(
        sb.git(&repo, &["log", "-1", "--format=%s", "refs/heads/neo-memory"]),
        "neo: approve 2 proposed records"
    );
    assert!(sb.neo(&repo, &["verify"]).status.success(), "approved records verify");

    // --all approves what is left; with nothing pending it says so.
    let d = sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", "One more"]);
    sb.neo_ok(&repo, &["approve", "--all"]);
    assert!(sb.neo_ok(&repo, &["list"]).contains(&d[..12]));
    assert!(sb.neo_ok(&repo, &["approve", "--all"]).contains("no proposals"));
}

#[test]
fn off_mode_refuses_writes_clearly_and_unknown_modes_are_errors() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", "Readable later"]);
    let tip = sb.tip(&repo);
    sb.git(&repo, &["config", "neo.mode", "off"]);
    let out = sb.neo(&repo, &["add", "-t", "pattern", "-s", "Refused"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("neo.mode") && stderr(&out).contains("is off"), "{}", stderr(&out));
    assert_eq!(sb.tip(&repo), tip);
    assert!(sb.neo_ok(&repo, &["list"]).contains("Readable later"), "reads still work");
    sb.git(&repo, &["config", "neo.mode", "sometimes"]);
    let out = sb.neo(&repo, &["list"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("auto, review or off"), "{}", stderr(&out));
}
