//! Test support: real temporary git repositories and a hermetic way to run the real binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const NOW: &str = "2026-03-01T12:00:00Z";
pub const BIN: &str = env!("CARGO_BIN_EXE_git-neo");

/// The binary the command-line tests run: this build's, or another one named by
/// `GIT_NEO_TEST_BIN` (to show that a regression test fails on an older build).
pub fn bin() -> String {
    std::env::var("GIT_NEO_TEST_BIN").unwrap_or_else(|_| BIN.to_string())
}

/// A temporary directory holding one or more repositories.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

/// Apply the hermetic environment every subprocess gets: no user or system git config, a fixed
/// author and clock, no colour.
pub fn hermetic<'a>(cmd: &'a mut Command, home: &Path) -> &'a mut Command {
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_COMMON_DIR",
        "GIT_CEILING_DIRECTORIES",
        "XDG_DATA_HOME",
        "GIT_NEO_DATA_DIR",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", home.join("gitconfig"))
        .env("GIT_AUTHOR_NAME", "Ada Tester")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_NAME", "Ada Tester")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .env("GIT_AUTHOR_DATE", "2026-03-01T12:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-03-01T12:00:00Z")
        .env("GIT_NEO_NOW", NOW)
        .env("NO_COLOR", "1")
        // No background server unless a test asks for one, and its socket inside the sandbox.
        .env("GIT_NEO_DAEMON", "off")
        .env("XDG_RUNTIME_DIR", home.join("run"))
        .env("LC_ALL", "C")
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        std::fs::write(dir.path().join("gitconfig"), "[init]\n\tdefaultBranch = main\n")
            .expect("write the sandbox git config");
        Sandbox { dir }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Run git in `cwd`; panics with its stderr if it fails.
    pub fn git(&self, cwd: &Path, args: &[&str]) -> String {
        let out = self.git_output(cwd, args);
        assert!(out.status.success(), "git {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    pub fn git_output(&self, cwd: &Path, args: &[&str]) -> Output {
        let mut cmd = Command::new("git");
        hermetic(&mut cmd, self.dir.path()).current_dir(cwd).args(args);
        cmd.output().expect("run git")
    }

    /// A new non-bare repository with an initial commit holding `src/lib.rs`.
    pub fn repo(&self, name: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::create_dir_all(path.join("src")).expect("create repo dirs");
        self.git(&path, &["init", "-q"]);
        std::fs::write(path.join("src/lib.rs"), "pub fn answer() -> u32 {\n    42\n}\n").expect("write a source file");
        self.git(&path, &["add", "."]);
        self.git(&path, &["commit", "-q", "-m", "initial"]);
        path
    }

    /// A new repository whose current branch has no commits.
    pub fn unborn_repo(&self, name: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::create_dir_all(&path).expect("create repo dir");
        self.git(&path, &["init", "-q"]);
        path
    }

    /// A `git neo` command in `cwd`, hermetic.
    pub fn neo_cmd(&self, cwd: &Path) -> Command {
        let mut cmd = Command::new(bin());
        hermetic(&mut cmd, self.dir.path()).current_dir(cwd);
        cmd
    }

    pub fn neo(&self, cwd: &Path, args: &[&str]) -> Output {
        self.neo_cmd(cwd).args(args).output().expect("run git-neo")
    }

    /// Run `git neo`, assert success, return stdout.
    pub fn neo_ok(&self, cwd: &Path, args: &[&str]) -> String {
        let out = self.neo(cwd, args);
        assert!(
            out.status.success(),
            "git neo {args:?} exited {:?}\nstdout: {}\nstderr: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The memory ref's commit, or `None` when it does not exist.
    pub fn tip(&self, repo: &Path) -> Option<String> {
        let out = self.git_output(repo, &["rev-parse", "--verify", "-q", "refs/heads/neo-memory"]);
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
}

/// How many packs `repo`'s object database holds.
pub fn pack_count(repo: &Path) -> usize {
    std::fs::read_dir(repo.join(".git/objects/pack"))
        .map(|d| d.filter_map(|e| e.ok()).filter(|e| e.path().extension().is_some_and(|x| x == "pack")).count())
        .unwrap_or(0)
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).to_string()
}

pub fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

/// Where the real embedding model is installed (the user's cache, or `GIT_NEO_CACHE_DIR`); fails
/// with the fix when it is not (scripts/install-model.sh, which `.ci/run` runs).
pub fn installed_model_root() -> PathBuf {
    let root = std::env::var_os("GIT_NEO_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/git-neo")))
        .expect("HOME is set");
    let missing = git_neo::embed::ModelPaths::in_cache(&root).missing();
    assert!(missing.is_empty(), "the embedding model is not installed ({missing:?}): run scripts/install-model.sh");
    root
}

/// Compare `actual` with the pinned snapshot `tests/snapshots/<name>.md`: what a user sees is
/// reviewed in the diff of that file. `UPDATE_SNAPSHOTS=1 cargo test` rewrites the files; a
/// missing or different snapshot fails and leaves the new output beside it as `<name>.md.new`.
pub fn assert_snapshot(name: &str, actual: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    let path = dir.join(format!("{name}.md"));
    let actual = format!("{}\n", actual.trim_end());
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(&dir).expect("create tests/snapshots");
        std::fs::write(&path, &actual).expect("write the snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != actual {
        let new = dir.join(format!("{name}.md.new"));
        std::fs::write(&new, &actual).expect("write the new snapshot");
        panic!(
            "snapshot {name} differs from {} (new output in {}; review it and run with UPDATE_SNAPSHOTS=1 to accept)\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display(),
            new.display()
        );
    }
}

/// The fold of `repo`'s memory and the tips it was read from, read below the session (for the
/// tests that measure ranking and the indexes themselves).
pub fn fold_of(repo: &Path) -> (git_neo::store::Store, git_neo::state::State, Vec<String>) {
    let store = git_neo::store::Store::discover(repo, git_neo::store::StoreOptions::default()).expect("store");
    let snapshot = store.load().expect("load the memory");
    let tips = snapshot.tips.iter().map(|(_, c)| c.to_string()).collect();
    let state = git_neo::state::fold(snapshot.records.into_iter().map(|r| (r.id, r.record)));
    (store, state, tips)
}

/// Build the recall indexes of a fold (`fold_of`) with `embedder`.
pub fn indexes_of(
    fold: &(git_neo::store::Store, git_neo::state::State, Vec<String>),
    embedder: &mut dyn git_neo::embed::Embedder,
) -> git_neo::index::Indexes {
    let (store, state, tips) = fold;
    let (indexes, _) =
        git_neo::index::Indexes::open(&store.index_dir(), state, tips, &|_| None, Some(embedder), true, &mut |_, _| {})
            .expect("indexes");
    indexes
}

/// A child process stopped and reaped when this goes out of scope, a failed assertion included:
/// a test never leaves a server running.
pub struct Stopped(pub std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
