//! The CLI as a user meets it: bad input is refused with the field named and nothing written,
//! ids resolve like git's, JSON everywhere, exit codes as documented.

use crate::support::{json, stderr, stdout, Sandbox};
use git_neo::api::{AddRequest, Clock, Session, SessionOptions};
use git_neo::record::Timestamp;
use git_neo::store::Identity;

#[test]
fn bad_input_names_the_field_exits_non_zero_and_leaves_the_ref_unchanged() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let existing = sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Existing fact"]);
    std::fs::write(sb.path("latin1.md"), b"caf\xe9\n").expect("write");
    std::fs::write(sb.path("huge.md"), "x".repeat(70 * 1024)).expect("write");
    let latin1 = sb.path("latin1.md").to_string_lossy().to_string();
    let huge = sb.path("huge.md").to_string_lossy().to_string();
    let cases: Vec<(Vec<&str>, i32, &[&str])> = vec![
        (vec!["add", "-t", "decision", "-s", ""], 1, &["subject"]),
        (vec!["add", "-t", "decision", "-s", "   "], 1, &["subject"]),
        (vec!["add", "-t", "rumour", "-s", "x"], 1, &["type"]),
        (vec!["add", "-t", "rumour", "-s", ""], 1, &["type", "subject"]),
        (vec!["add", "-t", "decision", "-s", "two\nlines"], 1, &["subject", "line break"]),
        (vec!["add", "-t", "decision", "-s", "bell\u{7}"], 1, &["subject", "U+0007"]),
        (vec!["add", "-t", "decision", "-s", "x", "--body-file", &latin1], 1, &["body", "UTF-8"]),
        (vec!["add", "-t", "decision", "-s", "x", "--body-file", &huge], 1, &["body", "limit"]),
        (vec!["add", "-t", "decision", "-s", "x", "-b", "a\n---\nb"], 1, &["body", "fence"]),
        (vec!["add", "-t", "decision", "-s", "x", "--anchor", "/etc/passwd"], 1, &["anchors[0].path", "absolute"]),
        (vec!["add", "-t", "decision", "-s", "x", "--anchor", "../outside.rs"], 1, &["anchors[0].path", "escapes"]),
        (
            vec!["add", "-t", "decision", "-s", "x", "--anchor", "src/nope.rs"],
            1,
            &["anchors[0].path", "does not exist"],
        ),
        (vec!["add", "-t", "decision", "-s", "x", "--anchor", "src/lib.rs:5-2"], 1, &["anchors[0].path", "line range"]),
        (vec!["add", "-t", "decision", "-s", "x", "--confidence", "1.5"], 1, &["confidence"]),
        (vec!["add", "-t", "decision", "-s", "x", "--provenance", "vibes"], 1, &["provenance"]),
        (vec!["add", "-t", "decision", "-s", "x", "--tag", "Has Space"], 1, &["tags[0]"]),
        (vec!["add", "-t", "decision", "-s", "x", "--depends-on", "ffff"], 1, &["depends_on", "ffff"]),
        (vec!["add", "-t", "decision", "-s", "x", "--valid-from", "soon"], 1, &["valid_from"]),
        (
            vec!["add", "-t", "decision", "-s", "x", "--valid-from", "2026-05-01", "--valid-to", "2026-01-01"],
            1,
            &["valid_to"],
        ),
        (vec!["add", "-s", "no type"], 2, &["--type"]),
        (vec!["show", "0000"], 1, &["0000"]),
        (vec!["show", "xyz"], 1, &["id", "hex"]),
        (vec!["forget", &existing[..10], "--reason", " "], 1, &["reason"]),
        (vec!["forget", &existing[..10]], 2, &["--reason"]),
        (vec!["list", "--kind", "rumour"], 1, &["kind"]),
        (vec!["frobnicate"], 2, &["frobnicate"]),
    ];
    for (args, code, needles) in cases {
        let before = sb.tip(&repo);
        let out = sb.neo(&repo, &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "git neo {args:?}: {err}");
        for n in needles {
            assert!(err.contains(n), "git neo {args:?}: stderr should mention {n:?}: {err}");
        }
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(sb.tip(&repo), before, "git neo {args:?} must not move the ref");
    }
}

#[test]
fn yaml_special_characters_in_a_subject_round_trip_exactly() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let subject = r#"key: value # not a comment "quoted" 'single' [x] {y} &a *b !t |p >q %r @s `c` \ é 漢"#;
    let id = sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", subject]);
    let shown = json(&sb.neo_ok(&repo, &["show", &id, "--json"]));
    assert_eq!(shown["record"]["subject"], subject);
    assert!(shown["text"].as_str().is_some_and(|t| t.contains(r#"subject: "key: value # not a comment \"quoted\""#)));
}

#[test]
fn adding_the_same_content_again_returns_the_existing_id_without_a_commit() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = sb
        .neo_ok(&repo, &["add", "-t", "constraint", "-s", "Run migrations forward only", "-b", "Use expand/contract."]);
    let tip = sb.tip(&repo);
    let mut cmd = sb.neo_cmd(&repo);
    // A later time and different spacing and case: same normalised content.
    cmd.env("GIT_NEO_NOW", "2026-04-01T00:00:00Z").args([
        "add",
        "-t",
        "constraint",
        "-s",
        "run  migrations forward ONLY",
        "-b",
        "use expand/contract.\n",
    ]);
    let out = cmd.output().expect("run");
    assert!(out.status.success());
    assert_eq!(stdout(&out).trim(), id);
    assert!(stderr(&out).contains("already stored"));
    assert_eq!(sb.tip(&repo), tip, "no new commit");
    let dup = json(&sb.neo_ok(
        &repo,
        &["add", "-t", "constraint", "-s", "Run migrations forward only", "-b", "Use expand/contract.", "--json"],
    ));
    assert_eq!(dup["deduplicated"], true);
    // A different type is different content.
    let other =
        sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Run migrations forward only", "-b", "Use expand/contract."]);
    assert_ne!(other, id);
}

#[test]
fn ids_resolve_by_unique_prefix_and_ambiguity_lists_candidates() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    // Find two subjects whose records (as the CLI will write them) share a 4-digit prefix.
    let mut session = Session::new(SessionOptions {
        dir: repo.clone(),
        git_dir: None,
        ref_name: None,
        identity: Some(Identity { name: "Ada Tester".into(), email: "ada@example.com".into() }),
        clock: Clock::Fixed(Timestamp::parse(crate::support::NOW).expect("time")),
        embedder: git_neo::embed::EmbedderChoice::Off,
        scope: None,
        data_dir: None,
        config: Vec::new(),
    });
    let mut by_prefix = std::collections::HashMap::new();
    let (a, b) = (0..100_000)
        .find_map(|i| {
            let subject = format!("fact number {i}");
            let req = AddRequest { fact_type: "pattern".into(), subject: subject.clone(), ..AddRequest::default() };
            let id = session.dry_run(true, |s| s.add(&req)).expect("a dry run").id.to_hex();
            by_prefix.insert(id[..4].to_string(), subject.clone()).map(|other| (other, subject))
        })
        .expect("a 4-digit collision within 100k candidates");
    let id_a = sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", &a]);
    let id_b = sb.neo_ok(&repo, &["add", "-t", "pattern", "-s", &b]);
    assert_eq!(id_a[..4], id_b[..4]);
    let out = sb.neo(&repo, &["show", &id_a[..4]]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("ambiguous") && err.contains(&id_a[..12]) && err.contains(&id_b[..12]), "{err}");
    // A longer prefix is unique; the full id always is.
    let unique = (5..=64).find(|&n| id_a[..n] != id_b[..n]).expect("ids differ");
    assert!(sb.neo_ok(&repo, &["show", &id_a[..unique]]).contains(&a));
    assert!(sb.neo_ok(&repo, &["show", &id_b]).contains(&b));
}

#[test]
fn forget_hides_a_record_keeps_its_history_and_list_all_shows_it() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = sb.neo_ok(&repo, &["add", "-t", "failure", "-s", "The cache corrupts on resize"]);
    let ret = sb.neo_ok(&repo, &["forget", &id[..8], "--reason", "fixed upstream in 2.1"]);
    assert!(!sb.neo_ok(&repo, &["list"]).contains(&id[..12]), "forgotten facts are not listed");
    let all = sb.neo_ok(&repo, &["list", "--all"]);
    assert!(all.contains(&id[..12]) && all.contains("[retracted]"), "{all}");
    let shown = json(&sb.neo_ok(&repo, &["show", &id, "--json"]));
    assert_eq!(shown["status"], "retracted");
    assert_eq!(shown["retracted_by"], ret);
    let again = sb.neo(&repo, &["forget", &id, "--reason", "twice"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("already forgotten"));
    let log = sb.neo_ok(&repo, &["log"]);
    assert!(log.contains("neo: forget") && log.contains("+ retraction"), "{log}");
    // Re-adding forgotten content later writes a new record; in the same second by the same
    // author the bytes (and so the id) would be the forgotten record's, which is refused clearly.
    let same = sb.neo(&repo, &["add", "-t", "failure", "-s", "The cache corrupts on resize"]);
    assert_eq!(same.status.code(), Some(1));
    assert!(stderr(&same).contains("forgotten"), "{}", stderr(&same));
    let mut later = sb.neo_cmd(&repo);
    later.env("GIT_NEO_NOW", "2026-03-02T00:00:00Z").args([
        "add",
        "-t",
        "failure",
        "-s",
        "The cache corrupts on resize",
    ]);
    let readd = later.output().expect("run");
    assert!(readd.status.success(), "{}", stderr(&readd));
    assert_ne!(stdout(&readd).trim(), id);
}

#[test]
fn every_command_speaks_json_including_errors() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let init = json(&sb.neo_ok(&repo, &["init", "--json"]));
    assert_eq!(init["created"], true);
    assert_eq!(json(&sb.neo_ok(&repo, &["init", "--json"]))["created"], false);
    let add = json(&sb.neo_ok(
        &repo,
        &["--json", "add", "-t", "decision", "-s", "JSON everywhere", "--tag", "agents", "--key", "output format"],
    ));
    let id = add["id"].as_str().expect("id").to_string();
    assert!(add["commit"].is_string());
    let list = json(&sb.neo_ok(&repo, &["list", "--json", "--tag", "agents"]));
    assert_eq!(list[0]["id"], id);
    assert_eq!(list[0]["record"]["key"], "output format");
    assert_eq!(list[0]["confidence"], 0.7);
    let log = json(&sb.neo_ok(&repo, &["log", "--json"]));
    assert_eq!(log.as_array().map(|a| a.len()), Some(2));
    assert_eq!(log[0]["added"][0]["id"], id);
    assert_eq!(log[0]["added"][0]["kind"], "fact");
    let forget = json(&sb.neo_ok(&repo, &["forget", &id, "--reason", "test", "--json"]));
    assert!(forget["id"].is_string());
    let err = sb.neo(&repo, &["add", "-t", "nope", "-s", "", "--json"]);
    assert_eq!(err.status.code(), Some(1));
    let e = json(&stdout(&err));
    assert_eq!(e["error"]["category"], "user");
    let fields: Vec<&str> =
        e["error"]["problems"].as_array().expect("problems").iter().filter_map(|p| p["field"].as_str()).collect();
    assert_eq!(fields, ["type", "subject"]);
}

/// Every subcommand (and every nested one) refuses a bad command line under `--json` with one
/// JSON object on stdout: category `usage`, what was wrong, the argument, and exit 2.
#[test]
fn every_usage_error_under_json_is_one_json_object() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let commands_of = |path: &[&str]| -> Vec<String> {
        let mut args: Vec<&str> = path.to_vec();
        args.push("--help");
        let help = stdout(&sb.neo(&repo, &args));
        help.split("Commands:")
            .nth(1)
            .map(|rest| rest.split("\n\n").next().unwrap_or_default())
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .filter(|c| c != "help")
            .collect()
    };
    let mut paths: Vec<Vec<String>> = Vec::new();
    for c in commands_of(&[]) {
        let nested = commands_of(&[c.as_str()]);
        paths.push(vec![c.clone()]);
        paths.extend(nested.into_iter().map(|n| vec![c.clone(), n]));
    }
    assert!(paths.len() > 40, "the walk found the subcommands: {paths:?}");
    for path in &paths {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.extend(["--json", "--no-such-option"]);
        let out = sb.neo(&repo, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let text = stdout(&out);
        assert_eq!(text.trim().lines().count(), 1, "{args:?}: one object on one line: {text}");
        let v = json(&text);
        assert_eq!(v["error"]["category"], "usage", "{args:?}: {v}");
        assert_eq!(v["error"]["exit"], 2, "{args:?}: {v}");
        assert_eq!(v["error"]["field"], "--no-such-option", "{args:?}: {v}");
        assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{args:?}: {v}");
    }
    let missing = sb.neo(&repo, &["add", "--json", "-s", "no type"]);
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(json(&stdout(&missing))["error"]["kind"], "missing_required_argument");
    // A library error says its field and exit code too.
    let bad = json(&stdout(&sb.neo(&repo, &["add", "--json", "-t", "opinion", "-s", "x"])));
    assert_eq!((bad["error"]["field"].as_str(), bad["error"]["exit"].as_i64()), (Some("type"), Some(1)), "{bad}");
}

#[test]
fn outside_a_repository_is_a_user_error() {
    let sb = Sandbox::new();
    let plain = sb.path("plain");
    std::fs::create_dir_all(&plain).expect("mkdir");
    let mut cmd = sb.neo_cmd(&plain);
    cmd.env("GIT_CEILING_DIRECTORIES", sb.dir.path());
    let out = cmd.args(["list"]).output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not a git repository"), "{}", stderr(&out));
}

/// `git-neo` installed under `<sandbox>/prefix/bin` (a hard link to the built binary, or a copy),
/// and a command line for git with that directory first on `PATH`.
fn installed(sb: &Sandbox) -> (std::path::PathBuf, String) {
    let bin_dir = sb.path("prefix/bin");
    std::fs::create_dir_all(&bin_dir).expect("prefix/bin");
    let exe = bin_dir.join("git-neo");
    std::fs::hard_link(crate::support::bin(), &exe)
        .or_else(|_| std::fs::copy(crate::support::bin(), &exe).map(|_| ()))
        .expect("install the binary");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    (exe, path)
}

#[test]
fn after_the_documented_install_git_neo_help_shows_the_manual() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let (exe, path) = installed(&sb);
    let mut install = std::process::Command::new(&exe);
    crate::support::hermetic(&mut install, sb.dir.path()).current_dir(&repo).args(["install-man-pages", "--json"]);
    let out = install.output().expect("run install-man-pages");
    assert!(out.status.success(), "{}", stderr(&out));
    let dir = sb.path("prefix/share/man/man1");
    assert_eq!(
        json(&String::from_utf8_lossy(&out.stdout))["dir"].as_str().map(std::path::PathBuf::from),
        Some(dir.clone())
    );
    assert!(dir.join("git-neo-help.1").is_file(), "a page for `git neo help`");

    // git hands `--help` to man, and man finds the pages beside the binary on PATH: no MANPATH.
    for args in [&["neo", "--help"][..], &["help", "neo"][..]] {
        let mut git = std::process::Command::new("git");
        crate::support::hermetic(&mut git, sb.dir.path())
            .current_dir(&repo)
            .env("PATH", &path)
            .env_remove("MANPATH")
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "200")
            .args(args);
        let out = git.output().expect("run git (and man: .ci/run installs it)");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
        assert!(
            text.contains("SYNOPSIS") && text.contains("git neo") && text.contains("recall"),
            "git {args:?}: {text}"
        );
    }
    // Synopses name the value each option takes.
    let mut man = std::process::Command::new("man");
    crate::support::hermetic(&mut man, sb.dir.path())
        .env("PATH", &path)
        .env_remove("MANPATH")
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "400")
        .arg("git-neo-add");
    let out = man.output().expect("run man");
    let text = String::from_utf8_lossy(&out.stdout);
    let synopsis = text.split("DESCRIPTION").next().unwrap_or_default();
    for want in ["--type TYPE", "--subject SUBJECT", "--supersedes ID"] {
        assert!(synopsis.contains(want), "{want} in {synopsis}");
    }
}

#[test]
fn completions_complete_git_neo_and_git_neo_through_git() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let script = sb.path("git-neo.bash");
    std::fs::write(&script, sb.neo_ok(&repo, &["completions", "bash"])).expect("write the script");
    // Record ids complete for the commands that take one, asked of git-neo in the repository.
    let id = sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Completion knows this fact"]);
    // What bash's completion asks for, word by word: `git neo …` through git's completion (which
    // calls `_git_neo`) and `git-neo …` directly.
    let probe = format!(
        "source {}\n\
         COMP_WORDS=(git neo ad); COMP_CWORD=2; _git_neo; echo \"1 ${{COMPREPLY[*]}}\"\n\
         COMP_WORDS=(git neo recall --bud); COMP_CWORD=3; _git_neo; echo \"2 ${{COMPREPLY[*]}}\"\n\
         COMP_WORDS=(git neo session pro); COMP_CWORD=3; _git_neo; echo \"3 ${{COMPREPLY[*]}}\"\n\
         COMP_WORDS=(git-neo veri); COMP_CWORD=1; _git__neo git-neo veri git-neo; echo \"4 ${{COMPREPLY[*]}}\"\n\
         COMP_WORDS=(git neo add --type kn); COMP_CWORD=4; _git_neo; echo \"5 ${{COMPREPLY[*]}}\"\n\
         COMP_WORDS=(git neo add --provenance inf); COMP_CWORD=4; _git_neo; echo \"6 ${{COMPREPLY[*]}}\"\n\
         COMP_WORDS=(git neo import --from cursor); COMP_CWORD=4; _git_neo; echo \"7 ${{COMPREPLY[*]}}\"\n\
         COMP_WORDS=(git neo setup ge); COMP_CWORD=3; _git_neo; echo \"8 ${{COMPREPLY[*]}}\"\n\
         COMP_WORDS=(git neo --scope us); COMP_CWORD=3; _git_neo; echo \"9 ${{COMPREPLY[*]}}\"\n\
         COMP_WORDS=(git neo recall --type fai); COMP_CWORD=4; _git_neo; echo \"10 ${{COMPREPLY[*]}}\"\n\
         COMP_WORDS=(git neo show {p}); COMP_CWORD=3; _git_neo; echo \"11 ${{COMPREPLY[*]}}\"\n\
         COMP_WORDS=(git-neo forget {p}); COMP_CWORD=2; _git__neo_ids git-neo {p} forget; echo \"12 ${{COMPREPLY[*]}}\"\n",
        script.display(),
        p = &id[..3]
    );
    let bin_dir = std::path::Path::new(crate::support::BIN).parent().expect("binary directory");
    let mut bash = std::process::Command::new("bash");
    crate::support::hermetic(&mut bash, sb.dir.path())
        .current_dir(&repo)
        .env("PATH", format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default()));
    let out = bash.arg("-c").arg(&probe).output().expect("run bash");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    // Values, not file names: types, provenances, import formats, setup targets, scopes.
    for want in [
        "1 add",
        "2 --budget",
        "3 promote",
        "4 verify",
        "5 known-unknown",
        "6 inferred",
        "7 cursor-rules",
        "8 gemini",
        "9 user",
        "10 failure",
        &format!("11 {}", &id[..12]),
        &format!("12 {}", &id[..12]),
    ] {
        assert!(text.lines().any(|l| l == want), "{want:?} in {text}");
    }
    for shell in ["zsh", "fish"] {
        let s = sb.neo_ok(&repo, &["completions", shell]);
        assert!(s.contains("git-neo") && s.contains("recall") && s.contains("budget"), "{shell}: {s}");
    }
    let out = sb.neo(&repo, &["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "an unknown shell is a usage error");
}

#[test]
fn man_pages_are_generated_for_every_command() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let dir = sb.path("man/man1");
    let out = json(&sb.neo_ok(&repo, &["install-man-pages", dir.to_str().expect("utf-8"), "--json"]));
    let pages: Vec<String> =
        out["pages"].as_array().expect("pages").iter().map(|p| p.as_str().unwrap_or("").to_string()).collect();
    for want in
        ["git-neo.1", "git-neo-add.1", "git-neo-recall.1", "git-neo-construct-search.1", "git-neo-hooks-install.1"]
    {
        assert!(pages.iter().any(|p| p == want), "{want} missing from {pages:?}");
        assert!(dir.join(want).is_file(), "{want} not written");
    }
    let main = std::fs::read_to_string(dir.join("git-neo.1")).expect("main page");
    assert!(
        main.starts_with(".ie") || main.contains(".TH git-neo"),
        "not a roff page: {}",
        &main[..200.min(main.len())]
    );
    assert!(main.contains("recall") && main.contains("verify"), "the main page lists the commands");
    let add = std::fs::read_to_string(dir.join("git-neo-add.1")).expect("add page");
    assert!(add.contains("git neo add") && add.contains("supersedes"), "{add}");
}

/// The man pages say how the program exits, what it reads from the environment (every variable
/// the CLI reads, found in its source), and show examples.
#[test]
fn the_man_pages_have_exit_status_environment_and_examples() {
    let sb = Sandbox::new();
    let dir = sb.path("man");
    sb.neo_ok(sb.dir.path(), &["install-man-pages", &dir.to_string_lossy()]);
    let top = std::fs::read_to_string(dir.join("git-neo.1")).expect("the top page");
    for section in [".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH EXAMPLES"] {
        assert!(top.contains(section), "{section} in git-neo.1");
    }
    let add = std::fs::read_to_string(dir.join("git-neo-add.1")).expect("add's page");
    assert!(add.contains(".SH \"EXIT STATUS\""), "every page says how it exits");
    // Every variable the CLI's source reads is documented.
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
    let mut read = std::collections::BTreeSet::new();
    let mut files: Vec<std::path::PathBuf> =
        std::fs::read_dir(&src).expect("src/cli").map(|e| e.expect("entry").path()).collect();
    while let Some(dir) = files.iter().position(|p| p.is_dir()).map(|i| files.swap_remove(i)) {
        files.extend(std::fs::read_dir(&dir).expect("a folder of src/cli").map(|e| e.expect("entry").path()));
    }
    for file in files {
        let text = std::fs::read_to_string(&file).expect("source");
        for part in text.split("env(\"").skip(1) {
            if let Some(name) = part.split('"').next().filter(|n| n.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
            {
                read.insert(name.to_string());
            }
        }
    }
    assert!(read.len() >= 8, "found the variables: {read:?}");
    for var in &read {
        assert!(top.contains(&var.replace('-', "\\-")), "{var} is in ENVIRONMENT");
    }
}

/// On a terminal, work that takes less than a second draws no progress bar: an ordinary add and
/// recall (which embed one record) print their output and nothing that flashes.
#[test]
fn short_work_on_a_terminal_draws_no_progress_bar() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let bin = crate::support::BIN;
    let line = format!("{bin} add -t decision -s 'Deploys go to Fly.io' && {bin} recall 'where do deploys go'");
    // `script` gives the commands a terminal, as a person's shell does.
    let mut cmd = std::process::Command::new("script");
    crate::support::hermetic(&mut cmd, sb.dir.path())
        .current_dir(&repo)
        .env("GIT_NEO_EMBEDDER", "hash")
        .env("TERM", "xterm")
        .args(["-qec", &line, "/dev/null"]);
    let out = cmd.output().expect("script (util-linux) runs the commands on a terminal");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains("Deploys go to Fly.io"), "{text}");
    assert!(!text.contains("embedding [") && !text.contains("0/1"), "a bar was drawn: {text:?}");
}
