//! The review loop on a forge, modelled the way the forge runs it: a pull request from a fork into
//! the memory branch. For GitHub, the workflow is read from the pull request's merge commit (built
//! as the forge builds it, from the base branch and the proposal) and its steps run on a clean clone
//! with only what a fork's run gets: no repository variables, no secrets, a read-only token. For
//! GitLab, the pipeline is read from the source branch (the fork's copy of the memory branch) and
//! its script runs with GitLab's merge request variables. `git neo init --ci` writes both files into
//! the memory branch; `verify` accepts exactly that forge area.

use crate::support::{hermetic, stderr, stdout, Sandbox, BIN};
use serde_yaml::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const REV: &str = "0123456789abcdef0123456789abcdef01234567";

/// A project whose memory branch holds a fact and both CI files, its bare "forge" copy (which, as
/// GitHub does, serves commits by id), and a fork's clone that proposes one fact.
struct Forge {
    sb: Sandbox,
    origin: PathBuf,
    fork: PathBuf,
    base: String,
    head: String,
}

fn git(sb: &Sandbox, dir: &Path, args: &[&str]) -> String {
    sb.git(dir, args).trim().to_string()
}

fn forge() -> Forge {
    let sb = Sandbox::new();
    let repo = sb.repo("project");
    sb.neo_ok(&repo, &["add", "-t", "decision", "-s", "Deploys go to Fly.io from the main branch"]);
    for ci in ["github", "gitlab"] {
        let out = sb.neo_ok(
            &repo,
            &["init", "--ci", ci, "--install-git", "https://example.com/git-neo.git", "--install-rev", REV],
        );
        assert!(out.contains("wrote"), "{out}");
    }
    assert!(sb.neo_ok(&repo, &["verify"]).contains("ok"), "the forge area verifies");
    let origin = sb.path("origin.git");
    git(&sb, sb.dir.path(), &["clone", "-q", "--bare", &repo.to_string_lossy(), &origin.to_string_lossy()]);
    git(&sb, &origin, &["config", "uploadpack.allowAnySHA1InWant", "true"]);
    let base = git(&sb, &origin, &["rev-parse", "refs/heads/neo-memory"]);
    // The fork: a clone of the project, where a contributor proposes a fact on its memory branch.
    let fork = sb.path("fork");
    git(&sb, sb.dir.path(), &["clone", "-q", &origin.to_string_lossy(), &fork.to_string_lossy()]);
    sb.neo_ok(&fork, &["add", "-t", "pattern", "-s", "Retry webhooks with exponential backoff"]);
    let head = git(&sb, &fork, &["rev-parse", "refs/heads/neo-memory"]);
    assert_ne!(head, base);
    Forge { sb, origin, fork, base, head }
}

/// What GitHub does when the pull request is opened: keep the proposal's commits in the base
/// repository (`refs/pull/1/head`) and build the merge commit it runs the workflow from.
fn github_merge_commit(f: &Forge) -> String {
    let sb = &f.sb;
    git(sb, &f.fork, &["push", "-q", &f.origin.to_string_lossy(), "refs/heads/neo-memory:refs/pull/1/head"]);
    let tree = git(sb, &f.origin, &["merge-tree", "--write-tree", "refs/heads/neo-memory", "refs/pull/1/head"]);
    let merge = git(sb, &f.origin, &["commit-tree", &tree, "-p", &f.base, "-p", &f.head, "-m", "Merge pull request 1"]);
    git(sb, &f.origin, &["update-ref", "refs/pull/1/merge", &merge]);
    merge
}

/// A runner's clean clone of the base repository, checked out at `commit` (actions/checkout with
/// fetch-depth 0 on a pull_request event).
fn runner_checkout(f: &Forge, name: &str, from: &Path, fetch: &str, commit: &str) -> PathBuf {
    let dir = f.sb.path(name);
    git(&f.sb, f.sb.dir.path(), &["clone", "-q", &from.to_string_lossy(), &dir.to_string_lossy()]);
    git(&f.sb, &dir, &["fetch", "-q", "origin", fetch]);
    git(&f.sb, &dir, &["checkout", "-q", "--detach", commit]);
    dir
}

/// bash running `script` in `dir` with only `env` beside a clean environment and `git neo` on PATH.
fn run_step(f: &Forge, dir: &Path, script: &str, env: &[(String, String)]) -> std::process::Output {
    let bin_dir = Path::new(BIN).parent().expect("binary directory");
    let mut cmd = Command::new("bash");
    hermetic(&mut cmd, f.sb.dir.path());
    // A fork's run: nothing but what the workflow itself sets.
    for var in ["GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_NEO_NOW"] {
        cmd.env_remove(var);
    }
    cmd.current_dir(dir)
        .env("PATH", format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default()))
        .args(["-e", "-o", "pipefail", "-c", script]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run bash")
}

/// `${{ … }}` expressions of a pull_request event from a fork: the ones the workflow may use.
fn github_expression(expr: &str, f: &Forge) -> String {
    match expr.trim() {
        "github.base_ref" => "neo-memory".into(),
        "github.event.pull_request.head.sha" => f.head.clone(),
        other => panic!("the workflow reads ${{{{ {other} }}}}, which a fork's run does not have or is not modelled"),
    }
}

fn substitute(value: &str, f: &Forge) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("}}").expect("a closed expression") + start;
        out.push_str(&github_expression(&rest[start + 3..end], f));
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

fn assert_pinned(install: &str) {
    assert!(!install.contains("${{") && !install.contains("vars.") && !install.contains('$'), "{install}");
    assert!(install.contains("cargo install --locked") && install.contains(&format!("--rev {REV}")), "{install}");
}

#[test]
fn a_fork_pull_request_into_the_memory_branch_runs_the_github_workflow() {
    let f = forge();
    let merge = github_merge_commit(&f);
    let sb = &f.sb;
    // The forge looks in the merge commit's tree, which is the memory branch's.
    let files = git(sb, &f.origin, &["ls-tree", "--name-only", &format!("{merge}:.github/workflows")]);
    let workflows: Vec<&str> = files.lines().filter(|n| n.ends_with(".yml") || n.ends_with(".yaml")).collect();
    assert_eq!(workflows.len(), 1, "one workflow in the merge commit: {files}");
    let text = git(sb, &f.origin, &["show", &format!("{merge}:.github/workflows/{}", workflows[0])]);
    let wf: Value = serde_yaml::from_str(&text).expect("the workflow is YAML");
    // Its trigger selects this event and branch.
    let branches = &wf["on"]["pull_request"]["branches"];
    assert!(branches.as_sequence().is_some_and(|b| b.iter().any(|x| x == "neo-memory")), "{text}");
    assert_eq!(wf["permissions"]["contents"], "read", "a read-only token: {text}");
    assert_eq!(wf["permissions"].as_mapping().map(|m| m.len()), Some(1), "{text}");
    assert!(!text.contains("secrets.") && !text.contains("vars."), "a fork's run has neither: {text}");

    let runner = runner_checkout(&f, "gh-runner", &f.origin, "refs/pull/1/merge", &merge);
    let summary = sb.path("step-summary.md");
    let job = &wf["jobs"]["verify"];
    let mut env: Vec<(String, String)> = job["env"]
        .as_mapping()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str().expect("a name").to_string(), substitute(v.as_str().expect("a value"), &f)))
        .collect();
    env.push(("GITHUB_STEP_SUMMARY".into(), summary.to_string_lossy().into_owned()));
    let mut ran = 0;
    for step in job["steps"].as_sequence().expect("steps") {
        if let Some(uses) = step["uses"].as_str() {
            assert!(uses.starts_with("actions/checkout@"), "{uses}");
            assert_eq!(step["with"]["fetch-depth"].as_i64(), Some(0), "verify walks the proposal's history");
            continue;
        }
        let script = step["run"].as_str().expect("a run step");
        assert!(!script.contains("${{"), "nothing is interpolated into a script: {script}");
        if step["name"] == "Install git-neo" {
            assert_pinned(script);
            continue;
        }
        let out = run_step(&f, &runner, script, &env);
        assert!(out.status.success(), "step {:?} failed:\n{}\n{}", step["name"], stdout(&out), stderr(&out));
        ran += 1;
    }
    assert_eq!(ran, 3, "fetch, verify and the summary ran");
    let said = std::fs::read_to_string(&summary).expect("the job summary");
    assert!(said.contains("## Memory changes") && said.contains("Retry webhooks with exponential backoff"), "{said}");
}

#[test]
fn a_fork_merge_request_into_the_memory_branch_runs_the_gitlab_pipeline() {
    let f = forge();
    let sb = &f.sb;
    // GitLab reads the pipeline from the source branch: the fork's memory branch.
    let text = git(sb, &f.fork, &["show", &format!("{}:.gitlab-ci.yml", f.head)]);
    let ci: Value = serde_yaml::from_str(&text).expect("the pipeline is YAML");
    let job = &ci["memory-review"];
    let rule = job["rules"][0]["if"].as_str().expect("a rule");
    assert!(rule.contains(r#"$CI_PIPELINE_SOURCE == "merge_request_event""#), "{rule}");
    assert!(rule.contains(r#"$CI_MERGE_REQUEST_TARGET_BRANCH_NAME == "neo-memory""#), "{rule}");
    assert_eq!(job["variables"]["GIT_DEPTH"], "0", "{text}");
    assert!(
        !text.contains("$CI_MERGE_REQUEST_TITLE") && !text.contains("$CI_MERGE_REQUEST_SOURCE_BRANCH_NAME"),
        "{text}"
    );

    // The fork's pipeline: a clone of the fork at the proposal, GitLab's variables, nothing else.
    let runner = runner_checkout(&f, "gl-runner", &f.fork, "refs/heads/neo-memory", &f.head);
    let project_url = f.origin.to_string_lossy().trim_end_matches(".git").to_string();
    let env: Vec<(String, String)> = [
        ("CI_PIPELINE_SOURCE", "merge_request_event".to_string()),
        ("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "neo-memory".to_string()),
        ("CI_MERGE_REQUEST_PROJECT_URL", project_url),
        ("CI_COMMIT_SHA", f.head.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let script: Vec<&str> = job["script"].as_sequence().expect("a script").iter().filter_map(|l| l.as_str()).collect();
    assert_pinned(script[0]);
    let out = run_step(&f, &runner, &script[1..].join("\n"), &env);
    assert!(out.status.success(), "the pipeline failed:\n{}\n{}", stdout(&out), stderr(&out));
    let said = std::fs::read_to_string(runner.join("memory-changes.md")).expect("the artifact");
    assert!(said.contains("Retry webhooks with exponential backoff"), "{said}");
}

#[test]
fn the_forge_area_holds_ci_files_only_and_a_change_to_it_is_flagged() {
    let f = forge();
    let sb = &f.sb;
    // A proposal that changes the workflow: verify passes (it is the area), the diff says so.
    let diff = sb.neo_ok(&f.fork, &["diff", &f.base, &f.head]);
    assert!(!diff.contains(".github"), "the fact proposal leaves the area alone: {diff}");
    let blob = git(sb, &f.fork, &["hash-object", "-w", "--stdin"]);
    let write = |extra: &str| -> String {
        let index = sb.path("tmp-index");
        let _ = std::fs::remove_file(&index);
        let run = |args: &[&str]| -> String {
            let out = Command::new("git")
                .current_dir(&f.fork)
                .env("GIT_INDEX_FILE", &index)
                .args(args)
                .output()
                .expect("git");
            assert!(out.status.success(), "{args:?}: {}", stderr(&out));
            stdout(&out).trim().to_string()
        };
        run(&["read-tree", &f.head]);
        run(&["update-index", "--add", "--cacheinfo", &format!("100644,{blob},{extra}")]);
        let tree = run(&["write-tree"]);
        run(&["commit-tree", &tree, "-p", &f.head, "-m", "change the forge area"])
    };
    let changed = write(".github/workflows/neo-memory-review.yml");
    sb.git(&f.fork, &["update-ref", "refs/heads/neo-memory", &changed]);
    assert!(sb.neo_ok(&f.fork, &["verify"]).contains("ok"));
    let diff = sb.neo_ok(&f.fork, &["diff", &f.base, &changed]);
    assert!(diff.contains(".github/workflows/neo-memory-review.yml"), "the change to the CI file is flagged: {diff}");
    // Anything else under the area's names is refused by path.
    for extra in [".github/run.sh", ".github/workflows/build.sh"] {
        let bad = write(extra);
        sb.git(&f.fork, &["update-ref", "refs/heads/neo-memory", &bad]);
        let out = sb.neo(&f.fork, &["verify"]);
        assert_eq!(out.status.code(), Some(3), "{extra}: {}", stdout(&out));
        assert!(stdout(&out).contains(extra) || stderr(&out).contains(extra), "{extra} named: {}", stdout(&out));
    }
}

/// The examples in docs/ are exactly what `git neo init --ci` writes (with the docs' pin).
#[test]
fn the_documented_examples_are_what_init_writes() {
    let pin = git_neo::ci::Install::Git { url: "https://example.com/git-neo.git".into(), rev: REV.into() };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/examples");
    for (file, text) in [
        ("neo-memory-pr.yml", git_neo::ci::github("neo-memory", &pin)),
        ("neo-memory-mr.gitlab-ci.yaml", git_neo::ci::gitlab("neo-memory", &pin)),
    ] {
        if std::env::var_os("GIT_NEO_WRITE_EXAMPLES").is_some() {
            std::fs::write(root.join(file), &text).expect("write the example");
        }
        let on_disk = std::fs::read_to_string(root.join(file)).expect("the example");
        assert_eq!(on_disk, text, "docs/examples/{file} is stale: run this test with GIT_NEO_WRITE_EXAMPLES=1");
    }
}
