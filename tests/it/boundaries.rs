//! Tidy tests in the spirit of rust-analyzer's: read the sources and fail, naming file and line,
//! when a boundary that docs/ARCHITECTURE.md states is crossed.
//!
//! - Only `src/cli/` prints; the MCP server writes its protocol's lines to stdout in one place,
//!   `src/mcp/transport.rs`, and never prints otherwise.
//! - Only `src/store/` names `gix::` (it re-exports the few types callers need).
//! - Processes are spawned in two documented places only: `src/store/write.rs` (`git gc --auto`,
//!   fetch and push through `Store::run_git`) and `src/api/attempts.rs` (an attempt's check).
//! - No `unwrap()` outside tests.
//! - No module imports a layer above it ([`LAYERS`]); `error` is shared by all.
//! - Nothing stray at the repository root (a committed wheel, a scratch file).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each top-level module's layer: a module may import only modules of a lower layer (and
/// `error`, which every layer shares). Pure leaves at the bottom, the front ends at the top.
const LAYERS: &[(&str, u8)] = &[
    ("record", 0),
    ("markdown", 0),
    ("rank", 0),
    ("frame", 0),
    ("layout", 0),
    ("setup", 0),
    ("scope", 0),
    ("report", 0),
    ("config", 1),
    ("redact", 1),
    ("instructions", 1),
    ("foreign", 1),
    ("embed", 1),
    ("store", 2),
    ("state", 2),
    ("index", 3),
    ("outcomes", 3),
    ("curate", 3),
    ("construct", 4),
    ("recall", 5),
    ("api", 6),
    ("mcp", 7),
    ("cli", 8),
    ("main", 9),
];

/// Where a process may be spawned: git (store), an attempt's own check (api/attempts), and the
/// background server a command starts for the next one (cli/daemon).
const SPAWNERS: &[&str] = &["src/store/write.rs", "src/api/attempts.rs", "src/cli/daemon.rs"];

/// What may sit at the repository root.
const ROOT_ENTRIES: &[&str] = &[
    ".ci",
    ".git",
    ".gitignore",
    "Cargo.lock",
    "Cargo.toml",
    "README.md",
    "benches",
    "construct",
    "docs",
    "fixtures",
    "rustfmt.toml",
    "scripts",
    "src",
    "target",
    "tests",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a source file belongs to (`src/api/session.rs` -> `api`).
fn module_of(rel: &str) -> String {
    let rest = rel.strip_prefix("src/").unwrap_or(rel);
    let first = rest.split('/').next().unwrap_or(rest);
    first.strip_suffix(".rs").unwrap_or(first).to_string()
}

/// Every boundary problem under `root` (a checkout), as `path:line: what`.
pub fn problems(root: &Path) -> Vec<String> {
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let import = regex::Regex::new(r"\b(?:crate|git_neo)::([a-z_]+)").expect("a valid pattern");
    let mut out = Vec::new();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    for file in files {
        let rel = file.strip_prefix(root).unwrap_or(&file).to_string_lossy().replace('\\', "/");
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let module = module_of(&rel);
        for (i, line) in text.lines().enumerate() {
            let code = line.trim_start();
            // Tests (a `#[cfg(test)]` module ends every file that has one) may do anything.
            if code.starts_with("#[cfg(test)]") {
                break;
            }
            if code.starts_with("//") {
                continue;
            }
            let at = format!("{rel}:{}", i + 1);
            for mac in ["println!", "print!", "eprintln!", "eprint!", "dbg!", "std::io::stdout", "std::io::stderr"] {
                let protocol = rel == "src/mcp/transport.rs" && mac == "std::io::stdout";
                if code.contains(mac) && module != "cli" && !protocol {
                    out.push(format!("{at}: prints ({mac}) outside src/cli/"));
                }
            }
            if code.contains("gix::") && module != "store" {
                out.push(format!("{at}: names gix:: outside src/store/; re-export what is needed from store"));
            }
            if code.contains("Command::new") && !SPAWNERS.contains(&rel.as_str()) {
                out.push(format!("{at}: spawns a process outside {}", SPAWNERS.join(" and ")));
            }
            if code.contains(".unwrap()") {
                out.push(format!("{at}: unwrap() outside tests; return an error or `expect` why it cannot fail"));
            }
            let Some(&mine) = layers.get(module.as_str()) else { continue };
            for cap in import.captures_iter(code) {
                let target = &cap[1];
                if target == module || target == "error" {
                    continue;
                }
                if let Some(&theirs) = layers.get(target) {
                    if theirs >= mine {
                        out.push(format!(
                            "{at}: {module} (layer {mine}) imports {target} (layer {theirs}); only lower layers may be imported"
                        ));
                    }
                }
            }
        }
        if !layers.contains_key(module.as_str()) && module != "lib" && module != "error" {
            out.push(format!("{rel}:1: module {module} has no layer; add it to LAYERS and docs/ARCHITECTURE.md"));
        }
    }
    if let Ok(entries) = std::fs::read_dir(root) {
        let mut names: Vec<String> = entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        for name in names {
            if !ROOT_ENTRIES.contains(&name.as_str()) {
                out.push(format!("{name}: stray file at the repository root; move it where it belongs or delete it"));
            }
        }
    }
    out
}

#[test]
fn the_sources_keep_their_boundaries() {
    let found = problems(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(found.is_empty(), "boundary problems:\n{}", found.join("\n"));
}

#[test]
fn the_boundary_check_catches_each_kind_of_crossing() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path();
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("has a parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    write("src/state/mod.rs", "fn f() {\n    println!(\"x\");\n}\n#[cfg(test)]\nmod t { fn g() { println!(); } }\n");
    write("src/recall/mod.rs", "use crate::api::Memory;\nfn f(x: Option<u8>) -> u8 { x.unwrap() }\n");
    write("src/index/mod.rs", "use gix::ObjectId;\nfn f() { std::process::Command::new(\"git\"); }\n");
    write("src/store/mod.rs", "use gix::ObjectId;\n// println! in a comment is fine\n");
    write("src/api/attempts.rs", "fn f() { std::process::Command::new(\"sh\"); }\n");
    write("thing.whl", "");
    let found = problems(root);
    let has = |needle: &str| found.iter().any(|p| p.contains(needle));
    assert!(has("src/state/mod.rs:2: prints"), "{found:#?}");
    assert!(has("src/recall/mod.rs:1: recall (layer 5) imports api (layer 6)"), "{found:#?}");
    assert!(has("src/recall/mod.rs:2: unwrap()"), "{found:#?}");
    assert!(has("src/index/mod.rs:1: names gix::"), "{found:#?}");
    assert!(has("src/index/mod.rs:2: spawns a process"), "{found:#?}");
    assert!(has("thing.whl: stray file"), "{found:#?}");
    // Allowed: the store naming gix, a comment, the test module, attempts spawning its check.
    assert_eq!(found.len(), 6, "{found:#?}");
}
