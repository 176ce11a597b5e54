//! PURE. The CI files `git neo init --ci` writes into the memory branch's forge area
//! ([`crate::store::forge`]), so that a pull request (or merge request) into the memory branch is
//! verified where the forge looks for its pipeline:
//! - GitHub runs a `pull_request` workflow from the pull request's merge commit, whose tree is
//!   the memory branch's: the workflow must be *in* the memory branch (`.github/workflows/`);
//! - GitLab runs a merge request pipeline from the source branch's `.gitlab-ci.yml`: a fork's copy
//!   of the memory branch carries it.
//!
//! Both are safe for a fork's proposal: the install is pinned inside the file (a version or a
//! commit, no repository variable, which a fork's run does not receive), the token is read-only,
//! nothing the proposal controls is interpolated into a script (refs reach the shell through
//! `env:` or the forge's own variables), and the run ends with the semantic diff of the change.

/// How the CI job installs git-neo, pinned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Install {
    /// A published version: `cargo install --locked git-neo --version V`.
    Version(String),
    /// A commit of a git repository: `cargo install --locked --git URL --rev REV git-neo`.
    Git { url: String, rev: String },
}

impl Install {
    /// Check the pin: a version `MAJOR.MINOR.PATCH`, or a URL and a 40-hex-digit commit.
    pub fn check(&self) -> Result<(), (String, String)> {
        let plain = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "._-:/@+~".contains(c));
        match self {
            Install::Version(v) if plain(v) && v.chars().next().is_some_and(|c| c.is_ascii_digit()) => Ok(()),
            Install::Version(v) => {
                Err(("install-version".into(), format!("{v:?} is not a version; give one such as 0.1.0")))
            }
            Install::Git { url, .. } if !plain(url) => {
                Err(("install-git".into(), format!("{url:?} is not a plain URL (letters, digits and ._-:/@+~ only)")))
            }
            Install::Git { rev, .. } if rev.len() != 40 || !rev.chars().all(|c| c.is_ascii_hexdigit()) => Err((
                "install-rev".into(),
                format!("{rev:?} is not a commit; give the 40 hex digits of the commit you vetted"),
            )),
            Install::Git { .. } => Ok(()),
        }
    }

    fn command(&self) -> String {
        match self {
            Install::Version(v) => format!("cargo install --locked git-neo --version {v}"),
            Install::Git { url, rev } => format!("cargo install --locked --git {url} --rev {rev} git-neo"),
        }
    }
}

/// Where the GitHub workflow goes in the memory branch.
pub const GITHUB_PATH: &str = ".github/workflows/neo-memory-review.yml";
/// Where the GitLab pipeline goes in the memory branch.
pub const GITLAB_PATH: &str = ".gitlab-ci.yml";

/// The GitHub Actions workflow for pull requests into `branch`.
pub fn github(branch: &str, install: &Install) -> String {
    format!(
        r###"# Written by `git neo init --ci github` into the memory branch. GitHub runs a pull_request
# workflow from the pull request's merge commit, whose tree is the memory branch's, so the
# workflow lives here, beside the records (`git neo verify` accepts exactly this forge area).
# Safe for a pull request from a fork: the install is pinned in this file (no repository
# variables, which a fork's run does not get), the token is read-only, and refs reach the shell
# only through `env:`. Change it through a pull request like any memory change.
name: memory review

on:
  pull_request:
    branches: [{branch}]

permissions:
  contents: read

jobs:
  verify:
    runs-on: ubuntu-latest
    env:
      BASE_REF: ${{{{ github.base_ref }}}}
      # The proposal's commit: a fork's branch is not on origin, but its commits are fetchable
      # from the base repository by their id.
      HEAD_SHA: ${{{{ github.event.pull_request.head.sha }}}}
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0
      - name: Install git-neo
        run: {install}
      - name: Fetch the base and the proposal
        run: |
          git fetch --no-tags origin "+refs/heads/$BASE_REF:refs/remotes/origin/$BASE_REF"
          git fetch --no-tags origin "$HEAD_SHA"
      - name: Verify the proposed memory
        run: git neo verify --range "origin/$BASE_REF..$HEAD_SHA" --format github
      - name: Summarise the memory changes
        if: always()
        run: |
          {{
            echo "## Memory changes"
            git neo diff "origin/$BASE_REF" "$HEAD_SHA" || echo "(no summary: the diff failed; see the log)"
          }} >> "$GITHUB_STEP_SUMMARY"
"###,
        install = install.command()
    )
}

/// The GitLab CI pipeline for merge requests into `branch`.
pub fn gitlab(branch: &str, install: &Install) -> String {
    format!(
        r#"# Written by `git neo init --ci gitlab` into the memory branch. A merge request pipeline reads
# .gitlab-ci.yml from the source branch: the memory branch, or a fork's copy of it. The install is
# pinned in this file (a fork's pipeline gets no project variables), and nothing the merge request
# controls is interpolated into a script: refs come from GitLab's own variables.
memory-review:
  image: rust:1
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event" && $CI_MERGE_REQUEST_TARGET_BRANCH_NAME == "{branch}"
  variables:
    GIT_DEPTH: "0"
  script:
    - {install}
    - git fetch --no-tags "$CI_MERGE_REQUEST_PROJECT_URL.git" "+refs/heads/$CI_MERGE_REQUEST_TARGET_BRANCH_NAME:refs/remotes/target/$CI_MERGE_REQUEST_TARGET_BRANCH_NAME"
    - git neo verify --range "target/$CI_MERGE_REQUEST_TARGET_BRANCH_NAME..$CI_COMMIT_SHA"
    - git neo diff "target/$CI_MERGE_REQUEST_TARGET_BRANCH_NAME" "$CI_COMMIT_SHA" | tee memory-changes.md
  artifacts:
    when: always
    paths: [memory-changes.md]
"#,
        install = install.command()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_pin_the_install_and_interpolate_nothing_a_proposal_controls() {
        let pin = Install::Git { url: "https://example.com/git-neo.git".into(), rev: "a".repeat(40) };
        for text in [github("neo-memory", &pin), gitlab("neo-memory", &pin)] {
            assert!(text.contains(&format!("--rev {}", "a".repeat(40))), "{text}");
            assert!(!text.contains("vars."), "{text}");
            assert!(!text.contains("head_ref") && !text.contains("title"), "{text}");
            let yaml: serde_yaml::Value = serde_yaml::from_str(&text).expect("valid YAML");
            assert!(!yaml.is_null());
        }
        assert!(Install::Git { url: "x; rm -rf /".into(), rev: "a".repeat(40) }.check().is_err());
        assert!(Install::Git { url: "https://e.com/x.git".into(), rev: "main".into() }.check().is_err());
        assert!(Install::Version("0.1.0".into()).check().is_ok());
        assert!(Install::Version("$(id)".into()).check().is_err());
    }
}
