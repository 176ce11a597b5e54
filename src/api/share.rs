//! Use cases for sharing memory through git remotes: `sync` (fetch, merge, push with a lease)
//! and `propose` (push local additions to a proposal branch for review in a pull request).

use crate::api::WriteContext;
use crate::error::{Error, Result};
use crate::record::RecordId;
use crate::store::ObjectId;
use crate::store::{MergeKind, Push, Store};
use serde::Serialize;

/// How many times sync retries after losing a push race before giving up.
pub const SYNC_ATTEMPTS: u32 = 10;

/// What `sync` did.
#[derive(Clone, Debug, Serialize)]
pub struct SyncOutcome {
    pub remote: String,
    /// How the fetched memory was joined with the local one.
    pub merge: MergeKind,
    /// Records the remote had that the local memory did not.
    pub received: usize,
    /// Records pushed to the remote.
    pub sent: usize,
    pub pushed: bool,
    /// The memory commit both sides hold afterwards (absent when neither side has memory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tip: Option<String>,
    pub attempts: u32,
}

fn added_records(store: &Store, from: Option<ObjectId>, to: Option<ObjectId>) -> Result<usize> {
    let tree = |c: Option<ObjectId>| c.map(|c| store.tree_of(c)).transpose();
    Ok(store
        .diff_trees(tree(from)?, tree(to)?)?
        .iter()
        .filter(|c| c.change == "added" && c.path.ends_with(".md"))
        .count())
}

/// Purges on either side must hold on both before they are merged: a purge the remote made is
/// applied to the local history (rewritten without the record), and a purge made here is applied
/// to the fetched history before merging it, so the merged history holds the record nowhere and
/// the push (with a lease on what was fetched) replaces the remote's. Returns what to merge.
fn apply_purges(store: &Store, theirs: ObjectId, ctx: &WriteContext) -> Result<ObjectId> {
    let ids = |notes: Vec<String>| -> Vec<RecordId> { notes.iter().filter_map(|n| RecordId::from_hex(n)).collect() };
    let local = store.local_tip()?;
    let from_remote = ids(store.purge_notes(local, theirs)?);
    if !from_remote.is_empty() {
        store.apply_purges(&from_remote, &ctx.identity, ctx.now)?;
    }
    let Some(local) = store.local_tip()? else { return Ok(theirs) };
    let here = ids(store.purge_notes(Some(theirs), local)?);
    if here.is_empty() {
        return Ok(theirs);
    }
    let (paths, scrub) = store.purge_targets(theirs, &here)?;
    Ok(store.rewrite_history(theirs, &paths, &scrub)?.0)
}

/// Refuse to merge a fetched tip that holds a record a purge note in its own history names: it came back through a plain `git push` or `git merge` from a clone that
/// still had it, and merging would re-add it here too. Nothing is merged or pushed.
fn refuse_purged(store: &Store, theirs: ObjectId, remote: &str) -> Result<()> {
    // Only purges their history already records: a purge made here and not yet pushed is applied
    // to their history by `apply_purges`, which is the normal way a purge travels.
    let purged = store.purged_ids(theirs)?;
    if purged.is_empty() {
        return Ok(());
    }
    let (entries, _) = store.entries_of_tree(store.tree_of(theirs)?)?;
    let back: Vec<String> = entries
        .iter()
        .filter_map(|e| e.name_id)
        .filter(|id| purged.iter().any(|p| id.to_hex().starts_with(p.as_str())))
        .map(|id| id.short())
        .collect();
    if back.is_empty() {
        return Ok(());
    }
    Err(Error::Integrity(format!(
        "{remote}'s memory holds purged record{} {} again (pushed or merged with plain git by a clone that still had it); \
         nothing was merged or pushed. Purge it there again (`git neo purge <id>` and `git push --force-with-lease`) and sync \
         from that clone with `git neo sync`",
        if back.len() == 1 { "" } else { "s" },
        back.join(", ")
    )))
}

/// Fetch the remote's memory, merge it into the local memory, and push the result with a lease,
/// retrying when another clone pushed in between.
pub fn sync(store: &Store, remote: Option<&str>, ctx: &WriteContext) -> Result<SyncOutcome> {
    let remote = match remote {
        Some(r) => r.to_string(),
        None => store.default_remote()?,
    };
    let branch = store.branch()?.to_string();
    let dest = format!("refs/heads/{branch}");
    let mut received = 0;
    let mut merge = MergeKind::UpToDate;
    for attempt in 1..=SYNC_ATTEMPTS {
        let before = store.local_tip()?;
        let theirs = store.fetch_memory(&remote)?;
        let local = match theirs {
            Some(t) => {
                refuse_purged(store, t, &remote)?;
                let merge_with = apply_purges(store, t, ctx)?;
                let (kind, tip) =
                    store.merge_into_local(merge_with, &format!("{remote}/{branch}"), &ctx.identity, ctx.now)?;
                if kind != MergeKind::UpToDate {
                    merge = kind;
                }
                received += added_records(store, before, Some(tip))?;
                Some(tip)
            }
            None => before,
        };
        let Some(local) = local else {
            return Ok(SyncOutcome { remote, merge, received, sent: 0, pushed: false, tip: None, attempts: attempt });
        };
        if Some(local) == theirs {
            return Ok(SyncOutcome {
                remote,
                merge,
                received,
                sent: 0,
                pushed: false,
                tip: Some(local.to_string()),
                attempts: attempt,
            });
        }
        let sent = added_records(store, theirs, Some(local))?;
        match store.push_with_lease(&remote, local, &dest, theirs)? {
            Push::Done => {
                return Ok(SyncOutcome {
                    remote,
                    merge,
                    received,
                    sent,
                    pushed: true,
                    tip: Some(local.to_string()),
                    attempts: attempt,
                })
            }
            Push::Rejected(_) => std::thread::sleep(std::time::Duration::from_millis(20 * u64::from(attempt))),
        }
    }
    Err(Error::Contention { ref_name: format!("{remote}:{dest}"), attempts: SYNC_ATTEMPTS })
}

/// What `propose` did.
#[derive(Clone, Debug, Serialize)]
pub struct ProposeOutcome {
    pub remote: String,
    /// The branch on the remote holding the proposal (`neo-memory-proposals/<name>`).
    pub branch: String,
    /// Records the proposal adds to the remote's memory branch.
    pub records: usize,
    pub pushed: bool,
}

/// Push local memory commits the remote's memory branch lacks to `neo-memory-proposals/<name>`,
/// so a pull request into the memory branch shows exactly those record files. The remote's memory
/// is merged in locally first, so the proposal applies cleanly.
pub fn propose(store: &Store, remote: Option<&str>, name: Option<&str>, ctx: &WriteContext) -> Result<ProposeOutcome> {
    let remote = match remote {
        Some(r) => r.to_string(),
        None => store.default_remote()?,
    };
    let branch = store.branch()?.to_string();
    let theirs = store.fetch_memory(&remote)?;
    let local = match theirs {
        Some(t) => Some(store.merge_into_local(t, &format!("{remote}/{branch}"), &ctx.identity, ctx.now)?.1),
        None => store.local_tip()?,
    };
    let Some(local) = local else {
        return Err(Error::invalid("memory", "there is no local memory to propose; add records first"));
    };
    let records = added_records(store, theirs, Some(local))?;
    let name = match name {
        Some(n) => n.trim().to_string(),
        None => format!("{}-{}", ctx.identity.email.split('@').next().unwrap_or("proposal"), &local.to_string()[..8]),
    };
    if name.is_empty()
        || name.contains("..")
        || name.starts_with('/')
        || name.chars().any(|c| c.is_whitespace() || "~^:?*[\\".contains(c))
    {
        return Err(Error::invalid(
            "name",
            format!("{name:?} is not usable in a branch name; use letters, digits, - _ . /"),
        ));
    }
    let proposal = format!("{branch}-proposals/{name}");
    if records == 0 {
        return Ok(ProposeOutcome { remote, branch: proposal, records, pushed: false });
    }
    match store.push_with_lease(&remote, local, &format!("refs/heads/{proposal}"), None)? {
        Push::Done => Ok(ProposeOutcome { remote, branch: proposal, records, pushed: true }),
        Push::Rejected(why) => Err(Error::invalid(
            "name",
            format!(
                "the remote already has a branch {proposal} ({}); choose another --name",
                why.lines().last().unwrap_or("").trim()
            ),
        )),
    }
}
