//! The README's five-minute tour, executed: the block between `<!-- tour:begin -->` and
//! `<!-- tour:end -->` runs in a fresh repository with `git neo` on PATH, so the README cannot rot.

use crate::support::{hermetic, Sandbox, BIN};
use std::process::Command;

#[test]
fn the_readme_tour_runs_as_written() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("read README.md");
    let block = readme
        .split("<!-- tour:begin -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- tour:end -->").next())
        .expect("README.md has a tour block");
    let script: String = block.lines().filter(|l| !l.starts_with("```")).map(|l| format!("{l}\n")).collect();
    assert!(script.contains("git neo add"), "the tour adds memory");

    let sb = Sandbox::new();
    let work = sb.path("tour");
    std::fs::create_dir_all(&work).expect("mkdir");
    let bin_dir = std::path::Path::new(BIN).parent().expect("binary directory");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = Command::new("bash");
    hermetic(&mut cmd, sb.dir.path())
        .current_dir(&work)
        .env("PATH", path)
        .env_remove("GIT_NEO_NOW")
        .args(["-euo", "pipefail", "-c", &script]);
    let out = cmd.output().expect("run bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the tour failed\n--- script\n{script}\n--- stdout\n{stdout}\n--- stderr\n{stderr}");
    // Distinct statements draw no "possibly an update" hint (the hint is for the same thing only).
    assert!(!stderr.contains("possibly an update"), "{stderr}");
    // What the tour promises a reader they will see.
    assert!(stdout.contains("Never call the payments API from tests"), "{stdout}");
    assert!(stdout.contains("[retracted]"), "{stdout}");
    assert!(stdout.contains("neo: add constraint"), "{stdout}");
    assert!(stdout.contains("records, ok"), "verify passes: {stdout}");
    assert!(stdout.contains("# Memory for: add a refund endpoint to payments"), "recall answers: {stdout}");
    assert!(stdout.contains("### Forgotten"), "diff renders the forget: {stdout}");
    assert!(stdout.contains("[user]") && stdout.contains("[session:refunds]"), "scopes recalled together: {stdout}");
    assert!(stdout.contains("promoted 1 facts of session:refunds to project"), "{stdout}");
    assert!(stdout.contains("new     docs/payments.md"), "ingest: {stdout}");
    assert!(
        stdout.contains(
            "\"subject\":\"Never log card numbers.\",\"tags\":[\"agents-md\",\"agents.md\"],\"type\":\"constraint\""
        ),
        "the dry run: {stdout}"
    );
    assert!(
        stdout.contains("cites \"Refunds\" of docs/payments.md, which changed"),
        "review after the change: {stdout}"
    );
    assert!(stdout.contains("## Constraints (always apply)"), "the handbook: {stdout}");
}
