//! `git neo ingest <path|glob>…`: record the repository's documents as `source` records (their
//! sections and where the text is in git's history), and notice changed, moved and deleted ones.

use super::Ctx;
use git_neo::Error;
use std::path::{Component, Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// Documents: files, directories (their .md, .markdown, .mdx, .txt, .rst and .adoc files), or
    /// globs (`docs/**/*.md`, quoted), relative to the current directory.
    #[arg(required = true)]
    paths: Vec<String>,
    /// Print the plan (the commit and its records) and write nothing.
    #[arg(long)]
    dry_run: bool,
}

/// `path` (relative to `cwd`, inside the work tree `root`) as a repository-relative path.
fn relative(root: &Path, cwd: &Path, path: &str) -> Result<String, Error> {
    let joined = if Path::new(path).is_absolute() { PathBuf::from(path) } else { cwd.join(path) };
    let mut parts: Vec<String> = Vec::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                parts.pop();
            }
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => parts.clear(),
        }
    }
    let root_parts: Vec<String> = root
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    if parts.len() < root_parts.len() || parts[..root_parts.len()] != root_parts[..] {
        return Err(Error::invalid("paths", format!("{path:?} is outside the repository")));
    }
    Ok(parts[root_parts.len()..].join("/"))
}

/// Whether `path` matches `glob` (`*` within a directory, `**` across directories, `?` one
/// character).
fn glob_match(glob: &str, path: &str) -> bool {
    fn go(g: &[u8], p: &[u8]) -> bool {
        match (g.first(), p.first()) {
            (None, None) => true,
            (Some(b'*'), _) if g.get(1) == Some(&b'*') => {
                let rest = if g.get(2) == Some(&b'/') { &g[3..] } else { &g[2..] };
                (0..=p.len()).any(|i| go(rest, &p[i..]))
            }
            (Some(b'*'), _) => (0..=p.len()).take_while(|&i| i == 0 || p[i - 1] != b'/').any(|i| go(&g[1..], &p[i..])),
            (Some(b'?'), Some(c)) if *c != b'/' => go(&g[1..], &p[1..]),
            (Some(a), Some(b)) if a == b => go(&g[1..], &p[1..]),
            _ => false,
        }
    }
    go(glob.as_bytes(), path.as_bytes())
}

pub fn run(ctx: &mut Ctx, args: Args) -> Result<(), Error> {
    let root = ctx
        .session
        .work_dir()?
        .ok_or_else(|| Error::invalid("paths", "a bare repository has no documents to ingest; run this in a clone"))?
        .canonicalize()
        .map_err(|e| Error::Io { context: "reading the work tree's path".into(), source: e })?;
    let cwd =
        ctx.dir.canonicalize().map_err(|e| Error::Io { context: "reading the current directory".into(), source: e })?;
    let mut targets = Vec::new();
    // What a glob may name, read once for every glob given.
    let mut ingestible: Option<Vec<String>> = None;
    for p in &args.paths {
        let rel = relative(&root, &cwd, p)?;
        if rel.contains(['*', '?']) {
            // A glob: the committed files it matches, and the ingested ones (to notice deletions).
            let paths = match &mut ingestible {
                Some(paths) => paths,
                None => ingestible.insert(ctx.session.ingestible_paths()?),
            };
            let mut matched: Vec<String> = paths.iter().filter(|p| glob_match(&rel, p)).cloned().collect();
            if matched.is_empty() {
                return Err(Error::invalid("paths", format!("{p:?} matches no committed file")));
            }
            matched.sort();
            matched.dedup();
            targets.extend(matched);
        } else {
            targets.push(rel);
        }
    }
    let outcome = ctx.session.dry_run(args.dry_run, |s| s.ingest(&targets))?;
    if ctx.out.json {
        ctx.out.json(&outcome);
        return Ok(());
    }
    if let Some(plan) = &outcome.plan {
        ctx.show_plan(plan);
        return Ok(());
    }
    for s in &outcome.skipped {
        ctx.out.warn(&format!("left out {s}"));
    }
    for d in &outcome.documents {
        let id = d.id.map(|i| format!(" {}", i.short())).unwrap_or_default();
        let line = match d.change {
            "moved" => format!("moved   {} -> {}{id}", d.from.as_deref().unwrap_or(""), d.path),
            "deleted" => format!("deleted {} (its source is marked outdated)", d.path),
            c => format!("{c:<7} {}{id} ({} sections)", d.path, d.sections),
        };
        ctx.out.line(&line);
    }
    ctx.out.line(&format!("{} documents ingested, {} unchanged", outcome.documents.len(), outcome.unchanged));
    for (id, why) in &outcome.needs_review {
        ctx.out.warn(&format!("fact {} needs review: {why}", id.short()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_within_and_across_directories() {
        assert!(glob_match("docs/*.md", "docs/a.md"));
        assert!(!glob_match("docs/*.md", "docs/adr/a.md"));
        assert!(glob_match("docs/**/*.md", "docs/adr/a.md"));
        assert!(glob_match("docs/**/*.md", "docs/a.md"));
        assert!(glob_match("doc?/x.md", "docs/x.md"));
        assert!(!glob_match("*.md", "docs/x.md"));
        assert_eq!(relative(Path::new("/r"), Path::new("/r/docs"), "../README.md").ok().as_deref(), Some("README.md"));
        assert!(relative(Path::new("/r"), Path::new("/r"), "../x").is_err());
    }
}
