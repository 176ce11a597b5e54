//! Freshness: whether an attempt's check still applies at HEAD, from a path-limited comparison of
//! the commit it ran at with HEAD. Lives with the store because it is only git history; recall
//! and attempts both ask for it.

use super::Store;
use crate::error::Result;
use crate::record::AffectedFile;
use serde::Serialize;

/// Whether an attempt's check still applies at HEAD.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum Freshness {
    /// No affected file changed between the attempt's commit and HEAD.
    Fresh,
    /// Some affected files changed: each with the number of commits that changed it; those no
    /// longer at HEAD are also named in `deleted`.
    Stale {
        since: String,
        changed: Vec<(String, usize)>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        deleted: Vec<String>,
    },
    /// The commit is not in this clone (shallow or foreign history), or there is no HEAD.
    Unknown { reason: String },
}

impl std::fmt::Display for Freshness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Freshness::Fresh => f.write_str("fresh"),
            Freshness::Stale { since, changed, deleted } => {
                let parts: Vec<String> = changed
                    .iter()
                    .map(|(p, n)| match deleted.contains(p) {
                        true => format!("{p} was deleted"),
                        false => format!("{p} changed in {n} commit{}", if *n == 1 { "" } else { "s" }),
                    })
                    .collect();
                write!(f, "stale: {} since {}", parts.join(", "), &since[..since.len().min(12)])
            }
            Freshness::Unknown { reason } => write!(f, "unknown: {reason}"),
        }
    }
}

/// How many commits back freshness looks when counting changes.
const FRESHNESS_WALK_LIMIT: usize = 2000;

/// Freshness of a check recorded at `commit` over `files`.
pub fn freshness(store: &Store, commit: Option<&str>, files: &[AffectedFile]) -> Result<Freshness> {
    let Some(commit) = commit else {
        return Ok(Freshness::Unknown { reason: "the attempt was recorded before the first commit".into() });
    };
    let Some(head) = store.head_commit()? else {
        return Ok(Freshness::Unknown { reason: "HEAD has no commits".into() });
    };
    let Ok(id) = gix::ObjectId::from_hex(commit.as_bytes()) else {
        return Ok(Freshness::Unknown { reason: format!("{commit} is not a commit id") });
    };
    if !store.has_commit(id)? {
        return Ok(Freshness::Unknown {
            reason: format!("the commit {} is not in this clone", &commit[..commit.len().min(12)]),
        });
    }
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let changed = store.paths_changed_between(id, head, &paths, FRESHNESS_WALK_LIMIT)?;
    if changed.is_empty() {
        Ok(Freshness::Fresh)
    } else {
        let mut deleted = Vec::new();
        for (p, _) in &changed {
            if store.blob_at(head, p)?.is_none() {
                deleted.push(p.clone());
            }
        }
        Ok(Freshness::Stale { since: commit.to_string(), changed, deleted })
    }
}
