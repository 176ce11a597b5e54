//! The forge area of the memory branch: the CI files a forge reads from the branch a pull request
//! targets (or, for GitLab, from its source branch), kept beside the records so that a pull request
//! into the memory branch runs its check. Exactly two shapes are allowed: `.github/workflows/` holding
//! workflow files (`*.yml`, `*.yaml`), and `.gitlab-ci.yml` at the root, each a regular file of at
//! most [`MAX_FILE`] bytes. Anything else under those names is reported by `verify` at its path;
//! record readers never see the area, and writes keep it as it is (they edit the tree in place).

use crate::error::{Error, Result};
use crate::record::Timestamp;

/// The largest CI file the area holds.
pub const MAX_FILE: u64 = 64 * 1024;

/// The root names of the forge area.
pub const ROOTS: [&str; 2] = [".github", ".gitlab-ci.yml"];

/// For a root entry of the memory tree: `None` when it is not part of the forge area; `Some(Ok)`
/// when it is and holds only what is allowed; `Some(Err((path, why)))` for the first thing that is
/// not.
pub(crate) fn check_root_entry(
    repo: &gix::Repository,
    name: &str,
    mode: gix::objs::tree::EntryMode,
    oid: &gix::oid,
) -> Option<std::result::Result<(), (String, String)>> {
    let file_ok =
        |path: &str, mode: gix::objs::tree::EntryMode, oid: &gix::oid| -> std::result::Result<(), (String, String)> {
            if !mode.is_blob() || mode.is_executable() {
                return Err((path.to_string(), "is not a regular file; the forge area holds CI files only".into()));
            }
            match repo.find_header(oid) {
                Ok(h) if h.size() <= MAX_FILE => Ok(()),
                Ok(h) => Err((
                    path.to_string(),
                    format!("is {} bytes; a CI file in the forge area is at most {MAX_FILE}", h.size()),
                )),
                Err(e) => Err((path.to_string(), format!("its object cannot be read ({e})"))),
            }
        };
    match name {
        ".gitlab-ci.yml" => Some(file_ok(name, mode, oid)),
        ".github" => Some((|| {
            if !mode.is_tree() {
                return Err((name.to_string(), "is not a directory; the forge area holds .github/workflows/".into()));
            }
            let tree =
                repo.find_tree(oid.to_owned()).map_err(|e| (name.to_string(), format!("cannot be read ({e})")))?;
            for e in tree.iter() {
                let e = e.map_err(|e| (name.to_string(), format!("cannot be decoded ({e})")))?;
                let child = e.filename().to_string();
                if child != "workflows" || !e.mode().is_tree() {
                    return Err((
                        format!(".github/{child}"),
                        "is not allowed: the forge area holds .github/workflows/ only".into(),
                    ));
                }
                let wf = repo
                    .find_tree(e.oid().to_owned())
                    .map_err(|err| (".github/workflows".to_string(), format!("cannot be read ({err})")))?;
                for f in wf.iter() {
                    let f = f.map_err(|err| (".github/workflows".to_string(), format!("cannot be decoded ({err})")))?;
                    let file = f.filename().to_string();
                    let path = format!(".github/workflows/{file}");
                    if !(file.ends_with(".yml") || file.ends_with(".yaml")) {
                        return Err((path, "is not a workflow file (*.yml, *.yaml)".into()));
                    }
                    file_ok(&path, f.mode(), f.oid())?;
                }
            }
            Ok(())
        })()),
        _ => None,
    }
}

/// Whether `path` is where the forge area allows a file.
pub fn allowed_path(path: &str) -> bool {
    path == ".gitlab-ci.yml"
        || path.strip_prefix(".github/workflows/").is_some_and(|f| {
            !f.contains('/') && (f.ends_with(".yml") || f.ends_with(".yaml")) && f.len() > 4 && !f.starts_with('.')
        })
}

impl super::Store {
    /// Write `content` at `path` in the forge area of the memory ref, as one commit (`message`).
    /// `false` when the file already holds exactly that.
    pub fn write_forge_file(
        &self,
        path: &str,
        content: &[u8],
        message: &str,
        who: &super::Identity,
        now: Timestamp,
    ) -> Result<bool> {
        if !allowed_path(path) {
            return Err(Error::invalid(
                "path",
                format!("{path:?} is not in the forge area (.github/workflows/*.yml, .gitlab-ci.yml)"),
            ));
        }
        if content.len() as u64 > MAX_FILE {
            return Err(Error::invalid(
                "content",
                format!("is {} bytes; a CI file is at most {MAX_FILE}", content.len()),
            ));
        }
        self.write_file_at(path, content, message, who, now)
    }
}
