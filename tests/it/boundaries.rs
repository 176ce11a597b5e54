//! Tidy tests in the spirit of rust-analyzer's: parse the sources (syn) and fail, naming file and
//! line, when a boundary that docs/ARCHITECTURE.md states is crossed. Every `use` tree, path,
//! macro and method call outside `#[cfg(test)]` items is checked, with `use … as …` aliases
//! followed (`use std::io as sio; sio::stdout()` is a print), and the arguments of macros parsed
//! where they are expressions (`format!("{}", x.unwrap())`).
//!
//! - Only `src/cli/` prints (`println!`, `eprint!`, `dbg!`, `std::io::stdout`/`stderr`); the MCP
//!   server writes its protocol's lines to stdout in one place, `src/mcp/transport.rs`.
//! - Only `src/cli/` and `src/main.rs` read the environment (`std::env::var` and its kin).
//! - Only `src/store/` names `gix`.
//! - Processes are spawned (`std::process::Command`) in the documented places only ([`SPAWNERS`]).
//! - No `unwrap()` outside tests.
//! - No module imports a layer above it (the layers table of docs/ARCHITECTURE.md, [`layer_table`]);
//!   `error` is shared by all and names no module but `record`; no pure module names `store`.
//! - Nothing stray at the repository root (a committed wheel, a scratch file).
//! - The front ends (`cli`, `mcp`, `main`) use the library through `api::Session` and the
//!   facade's types (`api::AddRequest`): they never name `store`, `index`, `state`, nor a part of
//!   `api` (`api::write::…`); inside `api`, each part is a layer of its own (`api/write` below
//!   `api/session`), and the facade (`api`) is the top one, so a part names another by its
//!   path and never reaches up.
//! - Every path and code name docs/ARCHITECTURE.md gives in backticks exists ([`stale_names`]).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// Each top-level module's layer and whether it is pure, from the table in
/// docs/ARCHITECTURE.md (the rows after its `<!-- layers -->` marker): a module may import only
/// modules of a lower layer (and `error`, which every layer shares). Pure leaves at the bottom,
/// the front ends at the top.
fn layer_table(root: &Path) -> Result<Vec<(String, u8, bool)>, String> {
    let doc =
        std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).map_err(|e| format!("docs/ARCHITECTURE.md: {e}"))?;
    let start = doc.find("<!-- layers:").ok_or("docs/ARCHITECTURE.md: no `<!-- layers: … -->` table")?;
    let mut out = Vec::new();
    for line in doc[start..].lines().skip(1) {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').map(str::trim).collect();
        if !line.trim_start().starts_with('|') {
            if out.is_empty() {
                continue;
            }
            break;
        }
        let (Some(module), Some(layer)) = (cells.first(), cells.get(1)) else { continue };
        let Ok(layer) = layer.parse::<u8>() else { continue };
        out.push((module.trim_matches('`').to_string(), layer, cells.get(2).is_some_and(|k| *k == "pure")));
    }
    if out.is_empty() {
        return Err("docs/ARCHITECTURE.md: the layers table has no rows".into());
    }
    Ok(out)
}

/// Where a process may be spawned: git (store), an attempt's own check (api/learn/attempts), and the
/// background server a command starts for the next one (cli/daemon).
const SPAWNERS: &[&str] = &["src/store/write.rs", "src/api/learn/attempts.rs", "src/cli/daemon/mod.rs"];

/// The one file besides the store that commits records.
const WRITE_PATH: &str = "src/api/write/plan.rs";

/// The modules that face people and agents: they use the library through `api::Session` only.
const FRONT_ENDS: &[&str] = &["cli", "mcp", "main"];

/// Reading the environment: `std::env::` items other than these are reads of the user's
/// environment (or changes to it), which only the front end may do.
const ENV_ALLOWED: &[&str] = &["std::env::consts"];

/// What may sit at the repository root.
const ROOT_ENTRIES: &[&str] = &[
    ".ci",
    ".git",
    ".gitignore",
    "Cargo.lock",
    "Cargo.toml",
    "clippy.toml",
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

/// The module a source file belongs to: its top-level module (`src/recall/render.rs` ->
/// `recall`), or for `api`, the part of it (`src/api/session/mod.rs` -> `api/session`,
/// `src/api/memory.rs` -> `api/memory`; `src/api/mod.rs`, the facade, is `api`).
fn module_of(rel: &str) -> String {
    let rest = rel.strip_prefix("src/").unwrap_or(rel);
    let mut parts = rest.split('/');
    let first = parts.next().unwrap_or(rest);
    let first = first.strip_suffix(".rs").unwrap_or(first);
    match (first, parts.next()) {
        ("api", Some(part)) if part != "mod.rs" => format!("api/{}", part.strip_suffix(".rs").unwrap_or(part)),
        _ => first.to_string(),
    }
}

/// The module a path names (`crate::api::write::plan::Valid` -> `api/write`,
/// `crate::api::Session` -> `api`, `crate::recall::Recall` -> `recall`), given the modules the
/// layers table lists.
fn target_of(segs: &[String], layers: &BTreeMap<String, u8>) -> String {
    match (segs.get(1).map(String::as_str), segs.get(2)) {
        (Some("api"), Some(part)) if layers.contains_key(&format!("api/{part}")) => format!("api/{part}"),
        (Some(top), _) => top.to_string(),
        (None, _) => String::new(),
    }
}

/// Whether `attrs` hold `#[cfg(test)]` (or a `cfg` whose condition names `test`).
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && {
            let mut test = false;
            let _ = a.parse_nested_meta(|m| {
                test |= m.path.is_ident("test");
                Ok(())
            });
            test
        }
    })
}

/// The attributes of an item, for [`is_test`].
fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item::*;
    match item {
        Const(i) => &i.attrs,
        Enum(i) => &i.attrs,
        ExternCrate(i) => &i.attrs,
        Fn(i) => &i.attrs,
        ForeignMod(i) => &i.attrs,
        Impl(i) => &i.attrs,
        Macro(i) => &i.attrs,
        Mod(i) => &i.attrs,
        Static(i) => &i.attrs,
        Struct(i) => &i.attrs,
        Trait(i) => &i.attrs,
        TraitAlias(i) => &i.attrs,
        Type(i) => &i.attrs,
        Union(i) => &i.attrs,
        Use(i) => &i.attrs,
        _ => &[],
    }
}

/// Every path a `use` tree names, with the name it is bound to (`use a::{b as c}` -> (a::b, c)).
fn use_paths(prefix: &mut Vec<String>, tree: &syn::UseTree, out: &mut Vec<(Vec<String>, Option<String>, usize)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(prefix, &p.tree, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            let mut full = prefix.clone();
            if name != "self" {
                full.push(name.clone());
            }
            let bound = if name == "self" { prefix.last().cloned() } else { Some(name) };
            out.push((full, bound, n.ident.span().start().line));
        }
        syn::UseTree::Rename(r) => {
            let name = r.ident.to_string();
            let mut full = prefix.clone();
            if name != "self" {
                full.push(name);
            }
            out.push((full, Some(r.rename.to_string()), r.ident.span().start().line));
        }
        syn::UseTree::Glob(g) => out.push((prefix.clone(), None, g.star_token.span.start().line)),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(prefix, t, out);
            }
        }
    }
}

/// One file's walk: what it may do, the aliases its `use`s bind, and the problems found.
struct Checker<'a> {
    rel: &'a str,
    module: &'a str,
    layers: &'a BTreeMap<String, u8>,
    pure: &'a [String],
    aliases: HashMap<String, Vec<String>>,
    out: &'a mut Vec<String>,
}

impl Checker<'_> {
    fn problem(&mut self, line: usize, what: String) {
        let p = format!("{}:{line}: {what}", self.rel);
        if !self.out.contains(&p) {
            self.out.push(p);
        }
    }

    /// Check one path (already written out in full), named at `line`.
    fn check(&mut self, segs: &[String], line: usize) {
        let Some(first) = segs.first() else { return };
        let joined = segs.join("::");
        let module = self.module;
        if (first == "crate" || first == "git_neo") && segs.len() > 1 {
            let target = target_of(segs, self.layers);
            let target = target.as_str();
            if let (Some(&mine), Some(&theirs)) = (self.layers.get(module), self.layers.get(target)) {
                if target != module && target != "error" && theirs >= mine {
                    self.problem(
                        line,
                        format!("{module} (layer {mine}) imports {target} (layer {theirs}); only lower layers may be imported"),
                    );
                }
            }
        }
        if (first == "crate" || first == "git_neo")
            && segs.get(1).is_some_and(|t| t == "store")
            && self.pure.iter().any(|p| p == module)
        {
            self.problem(line, format!("{module} is pure and names store; take what it needs as an argument"));
        }
        // The errors are shared by every layer, so they depend on none but the records' own.
        if module == "error" && (first == "crate" || first == "git_neo") && segs.get(1).is_some_and(|t| t != "record") {
            self.problem(line, format!("error names {}; the errors may depend on record only", segs[1]));
        }
        // The front ends hold one session (`api::Session`): the memory, its store, its indexes and
        // its state are the session's to open and keep, with its policies applied. What they hand
        // it and get back is the facade's vocabulary (`api::AddRequest`, `api::RecordState`), never
        // a concern's inside (`api::write::…`).
        if FRONT_ENDS.contains(&module) && (first == "crate" || first == "git_neo") {
            let below = segs.get(1).is_some_and(|t| ["store", "index", "state"].contains(&t.as_str()));
            let inside = target_of(segs, self.layers).starts_with("api/");
            if below || inside {
                self.problem(line, format!("front end names {joined}; go through api::Session and the facade's types"));
            }
        }
        if first == "gix" && module != "store" {
            self.problem(line, "names gix outside src/store/; re-export what is needed from store".into());
        }
        if joined.starts_with("std::process::Command") && !SPAWNERS.contains(&self.rel) {
            self.problem(line, format!("spawns a process outside {}", SPAWNERS.join(" and ")));
        }
        if joined.starts_with("std::env::")
            && !ENV_ALLOWED.iter().any(|a| joined.starts_with(a))
            && module != "cli"
            && module != "main"
        {
            self.problem(line, format!("reads the environment ({joined}) outside src/cli/ and src/main.rs"));
        }
        for stream in ["std::io::stdout", "std::io::stderr"] {
            let protocol = self.rel == "src/mcp/transport.rs" && stream == "std::io::stdout";
            if joined.starts_with(stream) && module != "cli" && !protocol {
                self.problem(line, format!("prints ({stream}) outside src/cli/"));
            }
        }
    }

    /// A path as written, its first segment followed through the file's aliases.
    fn resolve(&self, path: &syn::Path) -> Vec<String> {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        match segs.first().and_then(|f| self.aliases.get(f)) {
            Some(full) if path.leading_colon.is_none() => {
                full.iter().cloned().chain(segs[1..].iter().cloned()).collect()
            }
            _ => segs,
        }
    }
}

impl<'ast> Visit<'ast> for Checker<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        // Tests (a `#[cfg(test)]` item anywhere in a file) may do anything.
        if !is_test(item_attrs(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    // `pub(in crate::api)` says who may see an item; it imports nothing.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut found = Vec::new();
        use_paths(&mut Vec::new(), &u.tree, &mut found);
        for (full, _, line) in &found {
            let resolved = match full.first().and_then(|f| self.aliases.get(f)) {
                Some(a) if u.leading_colon.is_none() => a.iter().cloned().chain(full[1..].iter().cloned()).collect(),
                _ => full.clone(),
            };
            self.check(&resolved, *line);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let line = path.segments.first().map_or(0, |s| s.ident.span().start().line);
        let segs = self.resolve(path);
        self.check(&segs, line);
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let name = mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        let line = mac.path.segments.first().map_or(0, |s| s.ident.span().start().line);
        if ["println", "print", "eprintln", "eprint", "dbg"].contains(&name.as_str()) && self.module != "cli" {
            self.problem(line, format!("prints ({name}!) outside src/cli/"));
        }
        // The arguments of `format!`-like macros are expressions: check them too.
        if let Ok(args) =
            mac.parse_body_with(syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)
        {
            for e in &args {
                self.visit_expr(e);
            }
        }
        syn::visit::visit_macro(self, mac);
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        if call.method == "unwrap" && call.args.is_empty() {
            self.problem(
                call.method.span().start().line,
                "unwrap() outside tests; return an error or `expect` why it cannot fail".into(),
            );
        }
        // Every write of records takes the one write path: plan, then `Memory::apply`, whose
        // filter, de-duplication and commit live in api/write/plan.rs.
        if call.method == "write_records" && self.module != "store" && self.rel != WRITE_PATH {
            self.problem(
                call.method.span().start().line,
                format!("writes records past the one write path; build a WritePlan and apply it ({WRITE_PATH})"),
            );
        }
        syn::visit::visit_expr_method_call(self, call);
    }
}

/// The aliases a file's `use`s bind at any depth (`use std::io as sio`, `use std::io::{self}`),
/// outside tests: name -> the full path it stands for.
fn aliases(file: &syn::File) -> HashMap<String, Vec<String>> {
    struct Uses(Vec<(Vec<String>, Option<String>, usize)>);
    impl<'ast> Visit<'ast> for Uses {
        fn visit_item(&mut self, item: &'ast syn::Item) {
            if !is_test(item_attrs(item)) {
                syn::visit::visit_item(self, item);
            }
        }
        fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
            use_paths(&mut Vec::new(), &u.tree, &mut self.0);
        }
    }
    let mut uses = Uses(Vec::new());
    uses.visit_file(file);
    uses.0.into_iter().filter_map(|(full, bound, _)| bound.map(|b| (b, full))).collect()
}

/// Every boundary problem under `root` (a checkout), as `path:line: what`.
pub fn problems(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let table = match layer_table(root) {
        Ok(t) => t,
        Err(e) => {
            out.push(e);
            Vec::new()
        }
    };
    let layers: BTreeMap<String, u8> = table.iter().map(|(m, l, _)| (m.clone(), *l)).collect();
    let pure: Vec<String> = table.iter().filter(|t| t.2).map(|t| t.0.clone()).collect();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    for file in files {
        let rel = file.strip_prefix(root).unwrap_or(&file).to_string_lossy().replace('\\', "/");
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let module = module_of(&rel);
        match syn::parse_file(&text) {
            Ok(parsed) => {
                // A use case names what it uses: a glob from its parent hides which concern
                // reaches which (test modules aside).
                if rel.starts_with("src/api/") {
                    for item in &parsed.items {
                        if let syn::Item::Use(u) = item {
                            if let syn::UseTree::Path(p) = &u.tree {
                                if p.ident == "super" && matches!(*p.tree, syn::UseTree::Glob(_)) {
                                    let line = p.ident.span().start().line;
                                    out.push(format!(
                                        "{rel}:{line}: imports its parent whole (use super::*); name what it uses"
                                    ));
                                }
                            }
                        }
                    }
                }
                let mut c = Checker {
                    rel: &rel,
                    module: &module,
                    layers: &layers,
                    pure: &pure,
                    aliases: aliases(&parsed),
                    out: &mut out,
                };
                c.visit_file(&parsed);
            }
            Err(e) => out.push(format!("{rel}:{}: does not parse: {e}", e.span().start().line)),
        }
        if !layers.contains_key(module.as_str()) && module != "lib" && module != "error" {
            out.push(format!(
                "{rel}:1: module {module} has no layer; add it to the layers table in docs/ARCHITECTURE.md"
            ));
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
    // A test module in the middle of a file ends nothing: what follows it is checked.
    write(
        "src/state/mod.rs",
        "fn f() {\n    println!(\"x\");\n}\n#[cfg(test)]\nmod t { fn g() { println!(); } }\nfn h() -> u8 { Some(1).unwrap() }\n",
    );
    write("src/recall/mod.rs", "use crate::api::memory::Memory;\nfn f(x: Option<u8>) -> u8 { x.unwrap() }\n");
    // A pure module that names the store, whatever its layer.
    write("src/recall/conflicts.rs", "fn f(s: &crate::store::Store) {}\n");
    write("src/index/mod.rs", "use gix::ObjectId;\nfn f() { std::process::Command::new(\"git\"); }\n");
    // Aliases are followed; arguments of macros are read; the environment is the front end's.
    write(
        "src/index/vectors.rs",
        "use std::io as sio;\nuse std::env;\nfn f() {\n    let _ = sio::stdout();\n    let _ = format!(\"{}\", env::var(\"HOME\").unwrap());\n}\n",
    );
    write("src/store/mod.rs", "use gix::ObjectId;\n// println! in a comment is fine\n");
    write("src/api/learn/attempts.rs", "fn f() { std::process::Command::new(\"sh\"); }\n");
    write("src/error.rs", "use crate::record::Problems;\npub enum E { A(crate::index::IndexError) }\n");
    write("thing.whl", "");
    // A front end that reaches past the session.
    write("src/mcp/tools.rs", "use git_neo::store::Store;\nfn f(m: &git_neo::api::write::AddRequest) {}\n");
    // A use case that commits records itself instead of applying a plan.
    write("src/api/learn/curate.rs", "fn f(s: &S) {\n    s.write_records(&[], \"m\");\n}\n");
    // A use case that imports its parent whole (a test module may).
    write("src/api/write/purge.rs", "use super::*;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n");
    // A concern that names the session above it, or the facade's name for a concern's type
    // (which hides what it depends on); who may see an item is no import.
    write(
        "src/api/write/confirm.rs",
        "use crate::api::session::Session;\nuse crate::api::AddRequest;\npub(in crate::api) fn f() {}\n",
    );
    // The layers come from the architecture document, as they do for the real tree.
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ARCHITECTURE.md"))
        .expect("docs/ARCHITECTURE.md");
    write("docs/ARCHITECTURE.md", &doc);
    let found = problems(root);
    let has = |needle: &str| found.iter().any(|p| p.contains(needle));
    assert!(has("src/state/mod.rs:2: prints (println!)"), "{found:#?}");
    assert!(has("src/state/mod.rs:6: unwrap()"), "{found:#?}");
    assert!(has("src/recall/mod.rs:1: recall (layer 5) imports api/memory (layer 7)"), "{found:#?}");
    assert!(has("src/recall/mod.rs:2: unwrap()"), "{found:#?}");
    assert!(has("src/recall/conflicts.rs:1: recall is pure and names store"), "{found:#?}");
    assert!(has("src/index/mod.rs:1: names gix"), "{found:#?}");
    assert!(has("src/index/mod.rs:2: spawns a process"), "{found:#?}");
    assert!(has("src/index/vectors.rs:4: prints (std::io::stdout)"), "{found:#?}");
    assert!(has("src/index/vectors.rs:5: reads the environment (std::env::var)"), "{found:#?}");
    assert!(has("src/index/vectors.rs:5: unwrap()"), "{found:#?}");
    assert!(has("src/error.rs:2: error names index"), "{found:#?}");
    assert!(has("thing.whl: stray file"), "{found:#?}");
    assert!(has("src/mcp/tools.rs:1: front end names git_neo::store::Store"), "{found:#?}");
    assert!(has("src/mcp/tools.rs:2: front end names git_neo::api::write::AddRequest"), "{found:#?}");
    assert!(has("src/api/write/confirm.rs:1: api/write (layer 8) imports api/session (layer 12)"), "{found:#?}");
    assert!(has("src/api/write/confirm.rs:2: api/write (layer 8) imports api (layer 13)"), "{found:#?}");
    assert!(!has("src/api/write/confirm.rs:3"), "{found:#?}");
    assert!(has("src/api/learn/curate.rs:2: writes records past the one write path"), "{found:#?}");
    assert!(has("src/api/write/purge.rs:1: imports its parent whole"), "{found:#?}");
    // Allowed: the store naming gix, a comment, the test module, attempts spawning its check,
    // and `use std::env` itself (naming the module reads nothing; `env::var` does).
    assert_eq!(found.len(), 18, "{found:#?}");
}

#[test]
fn a_module_missing_from_the_layers_table_is_named() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path();
    std::fs::create_dir_all(root.join("src/newthing")).expect("mkdir");
    std::fs::create_dir_all(root.join("docs")).expect("mkdir");
    std::fs::write(root.join("src/newthing/mod.rs"), "pub fn f() {}\n").expect("write");
    std::fs::write(
        root.join("docs/ARCHITECTURE.md"),
        "# A\n\n<!-- layers: read by tests/it/boundaries.rs -->\n| module | layer | kind |\n| --- | --- | --- |\n| `record` | 0 | pure |\n\nAfter.\n",
    )
    .expect("write");
    let found = problems(root);
    assert_eq!(
        found,
        ["src/newthing/mod.rs:1: module newthing has no layer; add it to the layers table in docs/ARCHITECTURE.md"]
    );
    std::fs::write(root.join("docs/ARCHITECTURE.md"), "# A\n").expect("write");
    assert!(problems(root).iter().any(|p| p.contains("no `<!-- layers: … -->` table")), "{:?}", problems(root));
}

/// The names `doc` gives in backticks that the checkout at `root` does not have: paths (under
/// `src/`, `docs/`, `tests/`, `benches/`, `scripts/`, `.ci/`) that do not exist, and code names
/// (`CamelCase` types, `module::item` paths, `function()` calls, `snake_case` names) of which a
/// segment is nowhere in the Rust sources (`src/`, `tests/`, `benches/`). Plain words (`facts`,
/// `text`) are prose and not checked.
/// Every Rust file under `src`, `tests` and `benches`.
fn files_of(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        rust_files(&root.join(dir), &mut files);
    }
    files
}

/// Every `(Type, member)` the sources define: methods, associated consts and types of `impl`
/// blocks, trait items, enum variants and struct fields.
fn members(files: &[PathBuf]) -> std::collections::HashSet<(String, String)> {
    struct Members(std::collections::HashSet<(String, String)>);
    impl<'ast> Visit<'ast> for Members {
        fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
            if let syn::Type::Path(p) = &*i.self_ty {
                if let Some(ty) = p.path.segments.last() {
                    for item in &i.items {
                        let name = match item {
                            syn::ImplItem::Fn(f) => f.sig.ident.to_string(),
                            syn::ImplItem::Const(c) => c.ident.to_string(),
                            syn::ImplItem::Type(t) => t.ident.to_string(),
                            _ => continue,
                        };
                        self.0.insert((ty.ident.to_string(), name));
                    }
                }
            }
            syn::visit::visit_item_impl(self, i);
        }
        fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
            for item in &t.items {
                if let syn::TraitItem::Fn(f) = item {
                    self.0.insert((t.ident.to_string(), f.sig.ident.to_string()));
                }
            }
            syn::visit::visit_item_trait(self, t);
        }
        fn visit_item_enum(&mut self, e: &'ast syn::ItemEnum) {
            for v in &e.variants {
                self.0.insert((e.ident.to_string(), v.ident.to_string()));
            }
            syn::visit::visit_item_enum(self, e);
        }
        fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
            for f in s.fields.iter().filter_map(|f| f.ident.as_ref()) {
                self.0.insert((s.ident.to_string(), f.to_string()));
            }
            syn::visit::visit_item_struct(self, s);
        }
    }
    let mut m = Members(std::collections::HashSet::new());
    for f in files {
        if let Ok(parsed) = syn::parse_file(&std::fs::read_to_string(f).unwrap_or_default()) {
            m.visit_file(&parsed);
        }
    }
    m.0
}

pub fn stale_names(root: &Path, doc: &str) -> Vec<String> {
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut words = std::collections::HashSet::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        words.extend(text.split(|c: char| !(c.is_alphanumeric() || c == '_')).map(str::to_string));
    }
    let members = members(&files_of(root));
    let mut out = Vec::new();
    for token in doc.split('`').skip(1).step_by(2) {
        if token.contains('\n') {
            continue;
        }
        let path_like =
            ["src/", "docs/", "tests/", "benches/", "scripts/", ".ci/"].iter().any(|p| token.starts_with(p));
        if path_like {
            let path = token.split(['#', ' ', ':']).next().unwrap_or(token);
            if !root.join(path).exists() {
                out.push(format!("`{token}`: no such path"));
            }
            continue;
        }
        let code_chars = token.chars().all(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '(' || c == ')');
        let upper_inside = token.chars().skip(1).any(|c| c.is_uppercase()) && token.chars().any(|c| c.is_lowercase());
        let camel = token.starts_with(|c: char| c.is_uppercase()) && upper_inside;
        let code = code_chars
            && !token.is_empty()
            && (token.contains("::") || token.ends_with("()") || token.contains('_') || camel);
        if !code {
            continue;
        }
        let segs: Vec<&str> = token.trim_end_matches("()").split("::").filter(|s| !s.is_empty()).collect();
        if let Some(seg) = segs.iter().find(|seg| !words.contains(**seg)) {
            out.push(format!("`{token}`: {seg} is nowhere in the sources"));
            continue;
        }
        // `Type::member`: a method, associated item or variant that type really has.
        const EXTERNAL: [&str; 8] = ["std", "core", "alloc", "gix", "tantivy", "usearch", "rmcp", "serde_json"];
        let ours = segs.first().is_none_or(|first| !EXTERNAL.contains(first));
        if let (true, [.., ty, member]) = (ours, segs.as_slice()) {
            if ty.starts_with(|c: char| c.is_uppercase()) && !members.contains(&(ty.to_string(), member.to_string())) {
                out.push(format!("`{token}`: {ty} has no {member}"));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn every_path_and_name_the_architecture_document_gives_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("docs/ARCHITECTURE.md");
    let stale = stale_names(root, &doc);
    assert!(stale.is_empty(), "docs/ARCHITECTURE.md names what the code does not have:\n{}", stale.join("\n"));
    // The check itself: an invented path, method and type are each named; prose is not. (The
    // names are put together at run time: the sources this test reads include this file.)
    // A method a type lacks is named too, though both words are in the sources.
    let invented = format!(
        "`src/api/{}.rs` keeps `Session::forget_{}`, `Session::{}` and a `Flux{}`; `facts` are prose.",
        "nowhere", "everything", "apply", "Capacitor"
    );
    let found = stale_names(root, &invented);
    assert_eq!(found.len(), 4, "{found:#?}");
    assert!(found[0].contains("Flux") && found[1].contains("Session has no apply"), "{found:#?}");
    assert!(found[2].contains("forget_") && found[3].contains("nowhere.rs"), "{found:#?}");
}

/// Every function of `src/` outside tests and longer than `max` lines, as `path:line: name (n
/// lines)`; `tables` names the functions that are data tables, which may be as long as their data.
fn long_functions(root: &Path, max: usize, tables: &[&str]) -> Vec<String> {
    struct Long<'a> {
        rel: &'a str,
        max: usize,
        tables: &'a [&'a str],
        out: &'a mut Vec<String>,
    }
    impl Long<'_> {
        fn check(&mut self, name: &syn::Ident, block: &syn::Block) {
            let (start, end) = (name.span().start().line, block.brace_token.span.close().end().line);
            let n = end + 1 - start;
            if n > self.max && !self.tables.contains(&name.to_string().as_str()) {
                self.out.push(format!("{}:{start}: {name} is {n} lines; split it by its steps", self.rel));
            }
        }
    }
    impl<'ast> Visit<'ast> for Long<'_> {
        fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
            if !is_test(&m.attrs) {
                syn::visit::visit_item_mod(self, m);
            }
        }
        fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
            if !is_test(&f.attrs) {
                self.check(&f.sig.ident, &f.block);
                syn::visit::visit_item_fn(self, f);
            }
        }
        fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
            if !is_test(&f.attrs) {
                self.check(&f.sig.ident, &f.block);
                syn::visit::visit_impl_item_fn(self, f);
            }
        }
    }
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let rel = file.strip_prefix(root).unwrap_or(&file).to_string_lossy().replace('\\', "/");
        let Ok(parsed) = syn::parse_file(&std::fs::read_to_string(&file).unwrap_or_default()) else { continue };
        Long { rel: &rel, max, tables, out: &mut out }.visit_file(&parsed);
    }
    out
}

/// A function a newcomer can read in one go: none over 120 lines but the MCP tools' table.
#[test]
fn no_function_is_longer_than_120_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = long_functions(root, 120, &["all"]);
    assert!(found.is_empty(), "functions over 120 lines:\n{}", found.join("\n"));
    // The check itself: a long function is named, a short one and a test module are not.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let body: String = (0..130).map(|i| format!("    let _x{i} = {i};\n")).collect();
    let src = format!("fn long() {{\n{body}}}\nfn short() {{}}\n#[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{body}    }}\n}}\n");
    std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
    std::fs::write(dir.path().join("src/lib.rs"), src).expect("write");
    let found = long_functions(dir.path(), 120, &[]);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].starts_with("src/lib.rs:1: long is 132 lines"), "{found:#?}");
}
