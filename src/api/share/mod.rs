//! Use cases for sharing memory through git remotes: `sync` (fetch, merge, push with a lease)
//! and `propose` (push local additions to a proposal branch for review in a pull request).
//! Beneath it: where each scope lives and opening it (`scopes`), what a session does with whole
//! scopes (what a session does with whole scopes is `session/scopes.rs`), and the git hooks (`hooks`).

pub mod hooks;
pub mod scopes;

use crate::api::write::plan::{Destination, Planned, PlannedCommit, WritePlan};
use crate::api::write::WriteContext;
use crate::error::{Error, Result};
use crate::record::RecordId;
pub use crate::store::MergeKind;
use crate::store::ObjectId;
use crate::store::{Push, Store};
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
    /// Review-mode writes to the org memory pushed as a proposal branch by this sync.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposal: Option<ProposeOutcome>,
    /// What a person should know and fix, each naming its commit (a `Neo-Purge` trailer that
    /// purged nothing, which is ignored).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Warnings for `Neo-Purge` trailers in `from..to` that purged nothing: each names its commit
/// and what to do. They are not purge notes (see [`Store::false_purge_notes`]), so they neither
/// purge anything here nor block the sync.
/// When the remote's memory history was rewritten since the last fetch (the copy fetched before
/// is no ancestor of the new one) and records it held are gone without a `Neo-Purge` note for
/// them: what a person must hear. Nothing is lost (the local ref keeps them and the push that
/// follows puts them back), but someone rewrote a shared history. With `neo.sync.rewrites =
/// refuse` the sync stops instead, and the fetched copy is put back.
fn rewritten(store: &Store, remote: &str, before: Option<ObjectId>, fetched: ObjectId) -> Result<Option<String>> {
    let Some(before) = before else { return Ok(None) };
    if store.is_ancestor(before, fetched)? {
        return Ok(None);
    }
    let purged = store.purged_ids(fetched)?;
    let dropped: Vec<RecordId> = store
        .dropped_records(before, fetched)?
        .into_iter()
        .filter(|id| !purged.iter().any(|p| id.to_hex().starts_with(p.as_str())))
        .collect();
    if dropped.is_empty() {
        return Ok(None);
    }
    let shown: Vec<String> = dropped.iter().take(5).map(|id| id.short()).collect();
    let more = if dropped.len() > 5 { format!(" and {} more", dropped.len() - 5) } else { String::new() };
    let told = format!(
        "the memory history on {remote} was rewritten without a Neo-Purge note: {} record(s) it held are gone from it ({}{more}); \
         whoever rewrote {remote}'s memory branch must say why (a purge is done with `git neo purge`, which leaves the note)",
        dropped.len(),
        shown.join(", ")
    );
    let refuse =
        store.config_value(crate::config::SYNC_REWRITES).is_some_and(|v| v.trim().eq_ignore_ascii_case("refuse"));
    if refuse {
        store.restore_tracking(remote, before, fetched)?;
        return Err(Error::Integrity(format!(
            "{told}; refused ({} = refuse): nothing was merged or pushed",
            crate::config::SYNC_REWRITES
        )));
    }
    Ok(Some(format!("{told}; they are kept here, and this sync pushes them back")))
}

fn false_purge_warnings(store: &Store, from: Option<ObjectId>, to: ObjectId) -> Result<Vec<String>> {
    Ok(store
        .false_purge_notes(from, to)?
        .into_iter()
        .map(|(commit, note)| {
            format!(
                "commit {} carries `Neo-Purge: {note}` but its own tree still holds that record, so it purged nothing \
                 (the trailer was written by hand or by another tool) and is ignored; if the record must go, run \
                 `git neo purge {note}`",
                &commit.to_string()[..12]
            )
        })
        .collect())
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
    sync_checked(store, remote, ctx, &|_, _| Ok(()))
}

/// [`sync`], with `check` run on every fetched tip before anything of it is merged (the org
/// memory's fetched tips must pass verify).
pub fn sync_checked(
    store: &Store,
    remote: Option<&str>,
    ctx: &WriteContext,
    check: &dyn Fn(&Store, ObjectId) -> Result<()>,
) -> Result<SyncOutcome> {
    let remote = match remote {
        Some(r) => r.to_string(),
        None => store.default_remote()?,
    };
    let branch = store.branch()?.to_string();
    let dest = format!("refs/heads/{branch}");
    let mut received = 0;
    let mut merge = MergeKind::UpToDate;
    let mut warnings = Vec::new();
    let first_local = store.local_tip()?;
    let tracked = store.tracking_tip(&remote)?;
    for attempt in 1..=SYNC_ATTEMPTS {
        let before = store.local_tip()?;
        let theirs = store.fetch_memory(&remote)?;
        let local = match theirs {
            Some(t) => {
                check(store, t)?;
                if attempt == 1 {
                    warnings = false_purge_warnings(store, before, t)?;
                    if let Some(told) = rewritten(store, &remote, tracked, t)? {
                        warnings.push(told);
                    }
                }
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
        let done = |sent: usize, pushed: bool, tip: Option<ObjectId>| SyncOutcome {
            remote: remote.clone(),
            merge,
            received,
            sent,
            pushed,
            tip: tip.map(|t| t.to_string()),
            attempts: attempt,
            proposal: None,
            warnings: warnings.clone(),
        };
        let Some(local) = local else { return Ok(done(0, false, None)) };
        if Some(local) == theirs {
            return Ok(done(0, false, Some(local)));
        }
        let sent = added_records(store, theirs, Some(local))?;
        match store.push_with_lease(&remote, local, &dest, theirs) {
            Ok(Push::Done) => return Ok(done(sent, true, Some(local))),
            Ok(Push::Rejected(_)) => std::thread::sleep(std::time::Duration::from_millis(20 * u64::from(attempt))),
            // Timed out or refused by the remote: what this sync merged locally is taken back,
            // so a sync that did not finish changes nothing here (a later one merges it again).
            Err(e) => {
                if Some(local) != first_local {
                    if let Some(restore) = first_local {
                        let _ = store.restore_tip(local, restore, &ctx.identity, ctx.now);
                    }
                }
                return Err(e);
            }
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
        Push::Rejected(why) => Err(Error::invalid_with_hint(
            "name",
            format!("the remote already has a branch {proposal} ({})", why.lines().last().unwrap_or("").trim()),
            "choose another --name",
        )),
    }
}

/// A fetched tip of a shared memory must pass verify before anything of it is read or merged.
/// One that fails is forgotten (its remote-tracking copy deleted, so reads keep to the last
/// verified copy) and the reason is kept for recall to say.
pub fn verify_fetched(store: &Store, remote: &str, tip: ObjectId, now: crate::record::Timestamp) -> Result<()> {
    // Already merged, so already verified: a write that fetches the tip it pushed last time
    // verifies nothing again.
    if let Some(local) = store.local_tip()? {
        if store.is_ancestor(tip, local)? {
            return Ok(());
        }
    }
    let name = format!("refs/remotes/{remote}/{}", store.branch()?);
    let report = crate::api::inspect::verify::verify(store, &name, tip, None, now)?;
    if report.is_clean() {
        return scopes::set_refused(store, None);
    }
    let first = &report.problems[0];
    let why = format!(
        "its fetched memory {} fails verify ({} problem{}, first: {}: {}: {}); nothing of it is read until the remote is fixed",
        &tip.to_string()[..12],
        report.problems.len(),
        if report.problems.len() == 1 { "" } else { "s" },
        first.path,
        first.field,
        first.message
    );
    store.forget_fetched(remote, tip)?;
    scopes::set_refused(store, Some(&why))?;
    Err(Error::Integrity(why))
}

/// Share what was just written to the org memory: in review mode, push the waiting proposals as
/// a proposal branch; in auto mode, sync (fetch, verify, merge, push with a lease).
pub(crate) fn share_org(memory: &mut crate::api::memory::Memory, ctx: &WriteContext) -> Result<Option<ProposeOutcome>> {
    use crate::store::WriteMode;
    match memory.store().write_mode() {
        WriteMode::Review => publish_proposals(memory, ctx),
        WriteMode::Auto => {
            sync_checked(memory.store(), Some(scopes::REMOTE), ctx, &|s, t| {
                verify_fetched(s, scopes::REMOTE, t, ctx.now)
            })?;
            scopes::stamp_fetch(memory.store())?;
            Ok(None)
        }
        WriteMode::Off => Ok(None),
    }
}

/// Sync the org memory: fetch and verify, merge into the cache, then push (auto mode) or push
/// the waiting proposals as a proposal branch (review mode: the memory branch itself is never
/// pushed; a pull request moves proposals into it).
pub(crate) fn sync_org(memory: &mut crate::api::memory::Memory, ctx: &WriteContext) -> Result<SyncOutcome> {
    use crate::store::WriteMode;
    let remote = scopes::REMOTE;
    if memory.store().write_mode() == WriteMode::Auto {
        let outcome = sync_checked(memory.store(), Some(remote), ctx, &|s, t| verify_fetched(s, remote, t, ctx.now))?;
        scopes::stamp_fetch(memory.store())?;
        return Ok(outcome);
    }
    let store = memory.store();
    let before = store.local_tip()?;
    let theirs = store.fetch_memory(remote)?;
    let (mut merge, mut tip) = (MergeKind::UpToDate, before);
    if let Some(t) = theirs {
        verify_fetched(store, remote, t, ctx.now)?;
        let branch = store.branch()?.to_string();
        let (kind, new) = store.merge_into_local(t, &format!("{remote}/{branch}"), &ctx.identity, ctx.now)?;
        (merge, tip) = (kind, Some(new));
    }
    scopes::stamp_fetch(store)?;
    let received = added_records(store, before, tip)?;
    let proposal = publish_proposals(memory, ctx)?;
    Ok(SyncOutcome {
        remote: remote.into(),
        merge,
        received,
        sent: proposal.as_ref().map_or(0, |p| p.records),
        pushed: proposal.is_some(),
        tip: tip.map(|t| t.to_string()),
        attempts: 1,
        proposal,
        warnings: Vec::new(),
    })
}

/// Push the review-mode proposals waiting in the org cache as one proposal branch
/// (`neo-memory-proposals/<who>-<first id>`) built on the org's memory, so a pull request shows
/// exactly those records; once pushed they leave the local proposals. `None` when none wait.
pub(crate) fn publish_proposals(
    memory: &mut crate::api::memory::Memory,
    ctx: &WriteContext,
) -> Result<Option<ProposeOutcome>> {
    let remote = scopes::REMOTE;
    let proposals = memory.ensure_proposals()?;
    let Some(first) = proposals.state.order.first().copied() else { return Ok(None) };
    let mut records = Vec::new();
    let mut paths = Vec::new();
    for id in &proposals.state.order {
        let entry = &proposals.state.entries[id];
        let blob = proposals
            .blobs
            .get(id)
            .copied()
            .ok_or_else(|| Error::Integrity(format!("proposal {} has no blob", id.short())))?;
        records.push(Planned::Copy { id: *id, bytes: proposals.store.read_blob(blob)? });
        paths.push(crate::record::Record::path(entry.record.kind, id));
    }
    let store = memory.store();
    let theirs = store.fetch_memory(remote)?;
    let who = ctx.identity.email.split('@').next().unwrap_or("proposal");
    let who: String = who.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' }).collect();
    let name = format!("{who}-{}", first.short());
    let outbox = store.with_ref(&format!("refs/neo/outbox/{name}"))?;
    if let Some(t) = theirs {
        outbox.merge_into_local(t, &format!("{remote} memory"), &ctx.identity, ctx.now)?;
    }
    let n = records.len();
    let message = format!("neo: propose {n} record{}", if n == 1 { "" } else { "s" });
    let plan = WritePlan {
        destination: Destination::Own,
        commits: vec![PlannedCommit { message, records }],
        expected_tip: outbox.local_tip()?,
        create: true,
        origin: crate::api::write::plan::Origin::Given,
    };
    crate::api::write::plan::apply_to_store(&outbox, &plan, ctx)?;
    let tip = outbox
        .local_tip()?
        .ok_or_else(|| Error::Integrity(format!("{} vanished after it was written", outbox.ref_name())))?;
    let branch = format!("{}-proposals/{name}", store.branch()?);
    if let Push::Rejected(why) = store.push_with_lease(remote, tip, &format!("refs/heads/{branch}"), None)? {
        return Err(Error::invalid(
            "proposal",
            format!("the org memory refused the proposal branch {branch}: {}", why.lines().last().unwrap_or("").trim()),
        ));
    }
    // On the forge now: it waits for review there, not here.
    store.proposals()?.remove_records(&paths, &format!("neo: proposed as {branch}"), &ctx.identity, ctx.now)?;
    outbox.delete_ref(tip)?;
    memory.proposals = None;
    Ok(Some(ProposeOutcome { remote: remote.into(), branch, records: n, pushed: true }))
}
