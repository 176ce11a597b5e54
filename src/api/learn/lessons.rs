//! Use case: `git neo lesson`. Procedural lessons as reviewable patches to the project's own
//! instruction files (the rules are `crate::lesson`'s; docs/lessons.md says them for people).
//!
//! A lesson is a record (kind `lesson`) holding the file's content it was made from, both hashes
//! and the unified diff: proposing one writes only that record, like any memory write. Only the
//! explicit commands touch the work tree, and they say so: `apply` writes the file when its
//! content is still what the patch was made from, and `restore` writes the original back when
//! the file is still what was applied and the person said `--yes`. Each is recorded as an outcome
//! on the lesson (`applied`, `restored`), so the audit trail is the memory's history.
//!
//! `neo.lessons.mode`: `off` proposes nothing; `review` (default) writes proposals only;
//! `auto` applies an append-only patch as it is proposed, and leaves every other for review.
//! A lesson that arrived by fetch is never applied automatically.

use crate::api::memory::short_message;
use crate::api::memory::Memory;
use crate::api::write::AddOutcome;
use crate::api::write::WriteContext;
use crate::config::{LessonsMode, LESSONS_MODE};
use crate::error::{Error, Result};
use crate::lesson;
use crate::record::{Kind, Lesson, LessonChange, Milli, Outcome, Payload, Record, RecordId, Timestamp};
use crate::state::{Entry, Status};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The signals of a lesson's audit trail.
pub const APPLIED: &str = "applied";
pub const RESTORED: &str = "restored";

/// What a proposed lesson does to its file.
#[derive(Clone, Debug)]
pub enum LessonEdit {
    /// Add this text to git-neo's section of lessons (append-only).
    Append(String),
    /// Replace the first occurrence of `old` with `new` (a rewrite: always reviewed).
    Replace { old: String, new: String },
}

/// A lesson to propose.
#[derive(Clone, Debug)]
pub struct LessonRequest {
    /// The instruction file, repository-relative.
    pub file: String,
    pub edit: LessonEdit,
    /// The records it rests on.
    pub because: Vec<RecordId>,
    /// Why, in one line (default: the lesson's text).
    pub reason: Option<String>,
}

/// Where a lesson stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LessonStatus {
    /// Written to memory, not applied: waits for a person (`git neo lesson apply`).
    Proposed,
    Applied,
    Restored,
    /// Forgotten (`git neo forget`): a person turned it down.
    Rejected,
}

impl LessonStatus {
    /// The word the JSON and the listings use.
    pub fn as_str(self) -> &'static str {
        match self {
            LessonStatus::Proposed => "proposed",
            LessonStatus::Applied => "applied",
            LessonStatus::Restored => "restored",
            LessonStatus::Rejected => "rejected",
        }
    }
}

/// A lesson as the front ends show it.
#[derive(Clone, Debug, Serialize)]
pub struct LessonView {
    pub id: RecordId,
    pub file: String,
    pub change: LessonChange,
    pub status: LessonStatus,
    pub reason: String,
    pub because: Vec<RecordId>,
    pub at: Timestamp,
    pub author: String,
    /// When it was last applied or restored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_at: Option<Timestamp>,
    pub diff: String,
    /// Why the patch is not consistent with itself (`verify` calls it invalid), if it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
}

/// What `lesson propose` did.
#[derive(Clone, Debug, Serialize)]
pub struct Proposed {
    #[serde(flatten)]
    pub outcome: AddOutcome,
    pub lesson: LessonView,
    pub mode: LessonsMode,
    /// Set when `neo.lessons.mode=auto` applied it at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied: Option<WorkTreeEdit>,
}

/// What `lesson apply` or `lesson restore` did to the work tree.
#[derive(Clone, Debug, Serialize)]
pub struct WorkTreeEdit {
    pub id: RecordId,
    /// The work-tree file written (repository-relative).
    pub file: String,
    /// `applied` or `restored`.
    pub action: &'static str,
    /// The audit record (none in a dry run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<AddOutcome>,
    pub dry_run: bool,
    pub diff: String,
}

/// The lessons' counts, for `stats` and the report.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct LessonCounts {
    pub proposed: usize,
    pub applied: usize,
    pub restored: usize,
    pub rejected: usize,
}

/// Where lesson `e` stands, and when it last changed, from the outcomes on it.
pub fn status_of(
    entries: &std::collections::BTreeMap<RecordId, Entry>,
    e: &Entry,
) -> (LessonStatus, Option<Timestamp>) {
    if e.status == Status::Retracted {
        return (LessonStatus::Rejected, None);
    }
    let last = e
        .outcomes
        .iter()
        .filter_map(|o| entries.get(o))
        .filter_map(|o| match &o.record.payload {
            Payload::Outcome(out) if out.signal == APPLIED || out.signal == RESTORED => {
                Some((o.record.created_at, o.id, out.signal.clone()))
            }
            _ => None,
        })
        .max();
    match last {
        Some((t, _, s)) if s == APPLIED => (LessonStatus::Applied, Some(t)),
        Some((t, _, _)) => (LessonStatus::Restored, Some(t)),
        None => (LessonStatus::Proposed, None),
    }
}

/// Count the lessons of `state` by status.
pub fn counts(state: &crate::state::State) -> LessonCounts {
    let mut c = LessonCounts::default();
    for e in state.iter().filter(|e| e.record.kind == Kind::Lesson) {
        match status_of(&state.entries, e).0 {
            LessonStatus::Proposed => c.proposed += 1,
            LessonStatus::Applied => c.applied += 1,
            LessonStatus::Restored => c.restored += 1,
            LessonStatus::Rejected => c.rejected += 1,
        }
    }
    c
}

fn view(state: &crate::state::State, e: &Entry) -> Option<LessonView> {
    let l = e.record.as_lesson()?;
    let (status, changed_at) = status_of(&state.entries, e);
    Some(LessonView {
        id: e.id,
        file: l.file.clone(),
        change: l.change,
        status,
        reason: l.reason.clone(),
        because: l.because.clone(),
        at: e.record.created_at,
        author: e.record.author.clone(),
        changed_at,
        diff: lesson::diff_of_body(&e.record.body).unwrap_or_default().to_string(),
        invalid: lesson::check(l, &e.record.body).err(),
    })
}

/// Read the instruction file `rel` of the work tree `root`: refused when the path is not an
/// allowed target, runs through a symlink, lies in a nested repository (a vendored or cloned
/// skill), or holds what a record cannot (past the size bound, not UTF-8, CR line endings,
/// invisible format characters). A file that does not exist yet reads as empty.
pub fn read_target(root: &Path, rel: &str) -> Result<String> {
    lesson::check_target(rel).map_err(|m| Error::invalid("file", m))?;
    let mut at = root.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(Error::invalid(
                    "file",
                    format!(
                        "{rel}: {} is a symlink; lessons patch only the project's own files",
                        at.strip_prefix(root).unwrap_or(&at).display()
                    ),
                ));
            }
            Ok(m) if i + 1 < parts.len() && m.is_dir() && at.join(".git").exists() => {
                return Err(Error::invalid(
                    "file",
                    format!(
                        "{rel} is inside another repository ({}): a vendored or cloned skill is not patched",
                        at.strip_prefix(root).unwrap_or(&at).display()
                    ),
                ));
            }
            Ok(m) if i + 1 == parts.len() && !m.is_file() => {
                return Err(Error::invalid("file", format!("{rel} is not a regular file")));
            }
            _ => {}
        }
    }
    let bytes = match std::fs::read(&at) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(e) => return Err(Error::Io { context: format!("reading {rel}"), source: e }),
    };
    if bytes.len() > lesson::MAX_FILE_BYTES {
        return Err(Error::invalid(
            "file",
            format!("{rel} is {} bytes; lessons patch files up to {} bytes", bytes.len(), lesson::MAX_FILE_BYTES),
        ));
    }
    let text = String::from_utf8(bytes).map_err(|_| Error::invalid("file", format!("{rel} is not UTF-8 text")))?;
    if text.contains('\r') {
        return Err(Error::invalid(
            "file",
            format!("{rel} has CR line endings; lessons patch files with LF line endings"),
        ));
    }
    Ok(text)
}

/// Write `text` to `root/rel` through a temporary file renamed into place (a crash leaves the
/// old content or the new, never half of one).
fn write_target(root: &Path, rel: &str, text: &str) -> Result<()> {
    let path: PathBuf = root.join(rel);
    let io = |e| Error::Io { context: format!("writing {rel}"), source: e };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp =
        path.with_file_name(format!(".{}.git-neo-lesson", path.file_name().and_then(|n| n.to_str()).unwrap_or("file")));
    std::fs::write(&tmp, text).map_err(io)?;
    if let Ok(m) = std::fs::metadata(&path) {
        let _ = std::fs::set_permissions(&tmp, m.permissions());
    }
    std::fs::rename(&tmp, &path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}

impl Memory {
    /// `neo.lessons.mode` as this repository's configuration sets it.
    pub fn lessons_mode(&self) -> Result<LessonsMode> {
        LessonsMode::parse(self.store.config_value(LESSONS_MODE).as_deref())
    }

    fn work_root(&self) -> Result<PathBuf> {
        self.store
            .work_dir()
            .map(Path::to_path_buf)
            .ok_or_else(|| Error::invalid("file", "this repository has no work tree; lessons patch files in one"))
    }

    /// Every lesson, oldest first.
    pub fn lessons(&self) -> Vec<LessonView> {
        self.state.iter().filter(|e| e.record.kind == Kind::Lesson).filter_map(|e| view(&self.state, e)).collect()
    }

    /// The lesson record for `req`, made against the file as it is now (nothing written).
    pub fn plan_lesson(&self, req: &LessonRequest, ctx: &WriteContext) -> Result<Record> {
        let root = self.work_root()?;
        let original = read_target(&root, &req.file)?;
        let (after, change, text) = match &req.edit {
            LessonEdit::Append(text) => {
                let line = lesson::one_line(text);
                if line.is_empty() {
                    return Err(Error::invalid("append", "is empty; say the lesson in a sentence"));
                }
                if original.contains(&format!("- {line}\n")) {
                    return Err(Error::invalid("append", format!("{} already holds this lesson", req.file)));
                }
                (lesson::append(&original, &line), LessonChange::Append, line)
            }
            LessonEdit::Replace { old, new } => {
                if old.is_empty() || !original.contains(old.as_str()) {
                    return Err(Error::invalid(
                        "replace",
                        format!("{:?} is not in {}; give text the file holds", old, req.file),
                    ));
                }
                let after = original.replacen(old.as_str(), new, 1);
                let change =
                    if lesson::is_append(&original, &after) { LessonChange::Append } else { LessonChange::Rewrite };
                (after, change, lesson::one_line(new))
            }
        };
        if let Some(fm) = lesson::front_matter(&original) {
            if !after.starts_with(fm) {
                return Err(Error::invalid(
                    "replace",
                    format!("the edit changes the front matter of {}; a lesson keeps it as it is", req.file),
                ));
            }
        }
        let reason =
            req.reason.as_deref().map(lesson::one_line).filter(|r| !r.is_empty()).unwrap_or_else(|| text.clone());
        let diff = lesson::unified(&req.file, &original, &after);
        let why = match change {
            LessonChange::Append => format!("{reason}\n\nAppends this lesson to {}.", req.file),
            LessonChange::Rewrite => format!("{reason}\n\nRewrites part of {}: applied only after review.", req.file),
        };
        let payload = Payload::Lesson(Lesson {
            file: req.file.clone(),
            change,
            before: lesson::hash(&original),
            after: lesson::hash(&after),
            original,
            because: req.because.clone(),
            reason: short_line(&reason),
        });
        Ok(Record {
            kind: Kind::Lesson,
            payload,
            author: ctx.identity.author_field(),
            created_at: ctx.now,
            body: lesson::body(&why, &diff),
        })
    }

    /// Write a planned lesson record; in `auto` mode, apply it at once when it only appends.
    pub fn propose_lesson(&mut self, record: Record, ctx: &WriteContext) -> Result<Proposed> {
        let mode = self.lessons_mode()?;
        if mode == LessonsMode::Off {
            return Err(Error::Config {
                key: LESSONS_MODE.into(),
                message: "is off: no lesson is proposed; set it to review or auto".into(),
            });
        }
        let l = record.as_lesson().cloned().ok_or_else(|| Error::Internal("a lesson plan holds no lesson".into()))?;
        let message = format!("neo: lesson for {}: \"{}\" ({{id}})", l.file, short_message(&l.reason));
        let outcome = self.write(record, message, ctx)?;
        let mut applied = None;
        if mode == LessonsMode::Auto && l.change == LessonChange::Append && !outcome.proposed && !ctx.dry_run {
            applied = Some(self.apply_lesson_id(outcome.id, ctx)?);
        }
        let lesson = match self.state.entries.get(&outcome.id) {
            Some(e) => view(&self.state, e),
            None => None,
        };
        let lesson = match lesson {
            Some(v) => v,
            // A dry run or a review-mode proposal: shown as planned.
            None => LessonView {
                id: outcome.id,
                file: l.file.clone(),
                change: l.change,
                status: LessonStatus::Proposed,
                reason: l.reason.clone(),
                because: l.because.clone(),
                at: ctx.now,
                author: ctx.identity.author_field(),
                changed_at: None,
                diff: String::new(),
                invalid: None,
            },
        };
        Ok(Proposed { outcome, lesson, mode, applied })
    }

    fn lesson_entry(&self, prefix: &str) -> Result<(RecordId, Lesson, String)> {
        let id = self.resolve("id", prefix)?;
        let e = &self.state.entries[&id];
        let l = e.record.as_lesson().ok_or_else(|| {
            Error::invalid_with_hint(
                "id",
                format!("{} is a {}, not a lesson", id.short(), e.record.kind),
                "`git neo lesson list` lists them",
            )
        })?;
        if e.status == Status::Retracted {
            return Err(Error::invalid(
                "id",
                format!("lesson {} was rejected (forgotten); propose it again", id.short()),
            ));
        }
        // A lesson only a fetched copy holds is a stranger's text: it reaches the agents'
        // instructions only after it was reviewed and merged like any memory change.
        if let Some(remote) = self.remote_only.get(&id) {
            return Err(Error::invalid_with_hint(
                "id",
                format!("lesson {} arrived by fetch ({remote}) and is not merged", id.short()),
                "review it (`git neo diff`) and merge it with `git neo sync` first",
            ));
        }
        if let Err(why) = lesson::check(l, &e.record.body) {
            return Err(Error::Integrity(format!("lesson {} is invalid: {why}", id.short())));
        }
        Ok((id, l.clone(), e.record.body.clone()))
    }

    /// Apply lesson `prefix` to the work tree: only when the file's content is still what the
    /// patch was made from; recorded as an `applied` outcome.
    pub fn apply_lesson(&mut self, prefix: &str, ctx: &WriteContext) -> Result<WorkTreeEdit> {
        let id = self.resolve("id", prefix)?;
        self.apply_lesson_id(id, ctx)
    }

    fn apply_lesson_id(&mut self, id: RecordId, ctx: &WriteContext) -> Result<WorkTreeEdit> {
        let (id, l, body) = self.lesson_entry(&id.to_hex())?;
        let after =
            lesson::check(&l, &body).map_err(|e| Error::Integrity(format!("lesson {} is invalid: {e}", id.short())))?;
        let root = self.work_root()?;
        let now = read_target(&root, &l.file)?;
        let diff = lesson::unified(&l.file, &l.original, &after);
        if now == after {
            return Err(Error::invalid(
                "id",
                format!("lesson {} is already in {}; nothing to apply", id.short(), l.file),
            ));
        }
        if lesson::hash(&now) != l.before {
            return Err(Error::Changed {
                file: l.file.clone(),
                message: format!(
                    "changed since lesson {} was proposed, so it is not applied (nothing written); propose the lesson again against the file as it is. What changed:",
                    id.short()
                ),
                diff: lesson::unified(&l.file, &l.original, &now),
            });
        }
        self.record_lesson_change(id, &l, APPLIED, &root, &now, &after, diff, ctx)
    }

    /// Restore the file lesson `prefix` changed to its content before: only with `yes`, and only
    /// while the file is still exactly what the lesson applied; recorded as a `restored` outcome.
    pub fn restore_lesson(&mut self, prefix: &str, yes: bool, ctx: &WriteContext) -> Result<WorkTreeEdit> {
        let (id, l, body) = self.lesson_entry(prefix)?;
        let after =
            lesson::check(&l, &body).map_err(|e| Error::Integrity(format!("lesson {} is invalid: {e}", id.short())))?;
        let (status, _) = status_of(&self.state.entries, &self.state.entries[&id]);
        if status != LessonStatus::Applied {
            return Err(Error::invalid(
                "id",
                format!("lesson {} is {}, not applied; there is nothing to restore", id.short(), status.as_str()),
            ));
        }
        let root = self.work_root()?;
        let now = read_target(&root, &l.file)?;
        if lesson::hash(&now) != l.after {
            return Err(Error::Changed {
                file: l.file.clone(),
                message: format!(
                    "changed since lesson {} was applied, so it is not restored (nothing written); edit it by hand. How it differs from what was applied:",
                    id.short()
                ),
                diff: lesson::unified(&l.file, &after, &now),
            });
        }
        let diff = lesson::unified(&l.file, &now, &l.original);
        if !yes {
            return Err(Error::Unconfirmed {
                message: format!(
                    "restoring lesson {} writes {} back to its content before it; nothing written: pass --yes to restore. The change:",
                    id.short(),
                    l.file
                ),
                diff,
            });
        }
        let original = l.original.clone();
        self.record_lesson_change(id, &l, RESTORED, &root, &now, &original, diff, ctx)
    }

    /// Write `to` over `from` in the work tree, then the audit outcome; when the record cannot be
    /// written the file is put back, so the work tree never holds an edit the memory does not.
    #[allow(clippy::too_many_arguments)]
    fn record_lesson_change(
        &mut self,
        id: RecordId,
        l: &Lesson,
        action: &'static str,
        root: &Path,
        from: &str,
        to: &str,
        diff: String,
        ctx: &WriteContext,
    ) -> Result<WorkTreeEdit> {
        if ctx.dry_run {
            return Ok(WorkTreeEdit { id, file: l.file.clone(), action, record: None, dry_run: true, diff });
        }
        write_target(root, &l.file, to)?;
        let payload = Payload::Outcome(Outcome {
            target: id,
            signal: action.to_string(),
            delta: Milli(0),
            commits: self.store.head_commit()?.map(|c| vec![c.to_string()]).unwrap_or_default(),
            paths: vec![l.file.clone()],
            key: format!("{}:{action}:{}:{}", id.to_hex(), lesson::hash(to), ctx.now.0),
        });
        let record = Record {
            kind: Kind::Outcome,
            payload,
            author: ctx.identity.author_field(),
            created_at: ctx.now,
            body: String::new(),
        };
        let message = format!("neo: lesson {} {action} to {}", id.short(), l.file);
        match self.write(record, message, ctx) {
            Ok(outcome) => {
                Ok(WorkTreeEdit { id, file: l.file.clone(), action, record: Some(outcome), dry_run: false, diff })
            }
            Err(e) => {
                let _ = write_target(root, &l.file, from);
                Err(e)
            }
        }
    }
}

/// `s` cut to a record's line bound.
fn short_line(s: &str) -> String {
    let max = crate::record::validate::MAX_LINE_CHARS;
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}
