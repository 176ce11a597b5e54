//! Use cases for attempts: record one (with a check that is reported, or run and observed),
//! a task's history, whether a check still applies at HEAD (freshness), and re-checking.
//!
//! The git facts of an attempt (HEAD commit, dirty work tree, which affected files were dirty,
//! their blob ids) are read here from the repository, never taken from the caller. A command given
//! with `--run` is executed only as given, through the caller-named shell, in the repository root,
//! with a timeout; its output tail passes the secret filter (secrets are masked) before it is stored.

use crate::api::memory::Memory;
use crate::api::write::AddOutcome;
use crate::api::write::WriteContext;
use crate::error::{Error, Result};
use crate::record::{
    self, AffectedFile, Attempt, Check, CheckResult, CheckSource, Kind, Milli, Outcome, Payload, Problem, Problems,
    Record, RecordId,
};
pub use crate::store::{freshness, Freshness};
use serde::Serialize;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Bytes of command output kept (the tail).
pub const OUTPUT_TAIL_BYTES: usize = 4000;
/// Default timeout for `--run`.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(600);

/// How an attempt's check is given.
#[derive(Clone, Debug)]
pub enum CheckSpec {
    None,
    Reported { command: String, result: String },
    Run { command: String, shell: PathBuf, timeout: Duration },
}

/// A request to record an attempt.
#[derive(Clone, Debug)]
pub struct AttemptRequest {
    pub task: String,
    pub action: String,
    pub observation: String,
    pub inference: Option<String>,
    pub files: Vec<String>,
    pub check: CheckSpec,
    /// A free-form area label (the record's `scope` field); default: the memory's scope name.
    pub area: Option<String>,
    pub tags: Vec<String>,
    pub retry_of: Option<RecordId>,
    /// A code snippet the attempt proposes.
    pub suggestion: Option<String>,
}

/// What running a command gave.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    pub exit_code: Option<i64>,
    pub duration: Duration,
    pub output: String,
    pub timed_out: bool,
}

fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.replace('\r', "");
    let cleaned: String = text.chars().filter(|c| *c == '\n' || *c == '\t' || !c.is_control()).collect();
    if cleaned.len() <= OUTPUT_TAIL_BYTES {
        return cleaned;
    }
    let mut start = cleaned.len() - OUTPUT_TAIL_BYTES;
    while !cleaned.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &cleaned[start..])
}

/// Run `command` through `shell -c` in `dir`, with a timeout. Output is stdout then stderr.
pub fn run_command(command: &str, shell: &Path, dir: &Path, timeout: Duration) -> Result<RunOutcome> {
    let started = Instant::now();
    let mut cmd = Command::new(shell);
    cmd.arg("-c").arg(command).current_dir(dir).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // Its own process group, so a timeout kills everything the shell started: killing the shell
    // alone would leave a grandchild (`sleep`, a test runner) holding the output pipes open.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::Io { context: format!("starting {} -c {command:?}", shell.display()), source: e })?;
    let mut out = child.stdout.take().ok_or_else(|| Error::invalid("run", "no stdout pipe"))?;
    let mut err = child.stderr.take().ok_or_else(|| Error::invalid("run", "no stderr pipe"))?;
    let out_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out.read_to_end(&mut buf);
        buf
    });
    let err_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = err.read_to_end(&mut buf);
        buf
    });
    let mut timed_out = false;
    let status = loop {
        match child.try_wait().map_err(|e| Error::Io { context: "waiting for the check".into(), source: e })? {
            Some(status) => break Some(status),
            None if started.elapsed() >= timeout => {
                timed_out = true;
                kill_group(&mut child);
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    let mut bytes = out_thread.join().unwrap_or_default();
    let errs = err_thread.join().unwrap_or_default();
    if !errs.is_empty() {
        bytes.extend_from_slice(b"\n");
        bytes.extend_from_slice(&errs);
    }
    let mut output = tail(&bytes).trim().to_string();
    if timed_out {
        output.push_str(&format!("\n[git-neo: killed after the {} s timeout]", timeout.as_secs()));
    }
    Ok(RunOutcome {
        exit_code: status.and_then(|s| s.code()).map(i64::from),
        duration: started.elapsed(),
        output: crate::redact::mask_all(&output),
        timed_out,
    })
}

/// Kill the check's whole process group (see `run_command`), then the child itself as a fallback.
fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals the group we created for this child; it has
        // no memory-safety preconditions.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
}

/// An attempt as shown in a task's history.
#[derive(Clone, Debug, Serialize)]
pub struct AttemptView {
    #[serde(flatten)]
    pub entry: crate::api::view::RecordState,
    pub freshness: Freshness,
    /// The remote-tracking ref the attempt was fetched from when this clone's memory does not
    /// hold it (never re-run, never latest).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetched_from: Option<String>,
}

impl Memory {
    /// Record an attempt. Validates everything (every problem at once) before running a check or
    /// writing anything.
    pub fn attempt(&mut self, req: &AttemptRequest, ctx: &WriteContext) -> Result<AddOutcome> {
        Ok(self.attempt_inner(req, ctx)?.0)
    }

    /// The attempt record `req` asks for, validated, its check run when asked: not yet written.
    fn prepare_attempt(&mut self, req: &AttemptRequest, ctx: &WriteContext) -> Result<(Record, Attempt)> {
        let mut problems = Vec::new();
        let store = self.store();
        let work = store.work_dir().map(Path::to_path_buf);
        let head = store.head_commit()?;
        let mut files = Vec::new();
        for (i, path) in req.files.iter().enumerate() {
            let field = format!("files[{i}]");
            let before = problems.len();
            record::validate::check_repo_path(&mut problems, &field, path);
            if problems.len() > before {
                continue;
            }
            let at_head = store.blob_at_head(path)?;
            let on_disk = match &work {
                Some(w) => std::fs::read(w.join(path)).ok().map(|b| store.hash_blob(&b)).transpose()?,
                None => None,
            };
            match (at_head, on_disk) {
                (None, None) => {
                    problems.push(Problem::new(&field, format!("{path} does not exist at HEAD or in the work tree")))
                }
                (h, d) => files.push(AffectedFile {
                    path: path.clone(),
                    blob: d.or(h).map(|b| b.to_string()),
                    dirty: d.is_some() && d != h,
                }),
            }
        }
        let reported = match &req.check {
            CheckSpec::Reported { command, result } => match record::CheckResult::from_word(result.trim()) {
                Some(r) if r != CheckResult::Unverified => Some((command.clone(), r)),
                _ => {
                    problems.push(Problem::new(
                        "result",
                        format!("{result:?} is not a check result; use passed or failed"),
                    ));
                    None
                }
            },
            _ => None,
        };
        if let CheckSpec::Run { command, .. } | CheckSpec::Reported { command, .. } = &req.check {
            if command.trim().is_empty() {
                problems.push(Problem::new("check.command", "is empty; give the command that checks the attempt"));
            }
        }
        // Validate the record as it would be written (with a placeholder check) before running anything.
        let mut record = Record {
            kind: Kind::Attempt,
            payload: Payload::Attempt(Attempt {
                task: req.task.trim().to_string(),
                action: req.action.trim().to_string(),
                observation: req.observation.trim().to_string(),
                inference: req.inference.as_ref().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()),
                check: Check::unverified(head.map(|h| h.to_string()), store.work_tree_dirty()?),
                files,
                suggestion: req.suggestion.clone().filter(|s| !s.trim().is_empty()),
                retry_of: req.retry_of,
                scope: req.area.as_deref().map(str::trim).unwrap_or(self.scope.default_area()).to_string(),
                tags: {
                    let mut t: Vec<String> = req.tags.iter().map(|t| t.trim().to_lowercase()).collect();
                    t.sort();
                    t.dedup();
                    t
                },
            }),
            author: ctx.identity.author_field(),
            created_at: ctx.now,
            body: String::new(),
        };
        problems.extend(record::validate::validate(&record));
        problems.extend(crate::redact::check(&record));
        for (i, t) in req.tags.iter().enumerate() {
            crate::redact::check_given(&mut problems, &format!("tags[{i}]"), t);
        }
        if let CheckSpec::Run { command, .. } | CheckSpec::Reported { command, .. } = &req.check {
            for p in crate::redact::scan(command) {
                problems.push(Problem::new(
                    "check.command",
                    format!("looks like {} (rule {}); do not put secrets in commands", p.what, p.rule),
                ));
            }
        }
        if !problems.is_empty() {
            return Err(Error::Invalid(Problems(problems)));
        }
        let Payload::Attempt(a) = &mut record.payload else { unreachable!("built as an attempt above") };
        match &req.check {
            CheckSpec::None => {}
            CheckSpec::Reported { .. } => {
                let (command, result) = reported.expect("validated above");
                a.check.command = Some(command.trim().to_string());
                a.check.result = result;
                a.check.source = CheckSource::Reported;
            }
            CheckSpec::Run { command, shell, timeout } => {
                let dir = work.clone().unwrap_or_else(|| store.common_dir().to_path_buf());
                let run = run_command(command, shell, &dir, *timeout)?;
                // Whoever records an attempt by running its check here has read that command.
                store.trust_check(command.trim())?;
                a.check.command = Some(command.trim().to_string());
                a.check.result =
                    if run.exit_code == Some(0) && !run.timed_out { CheckResult::Passed } else { CheckResult::Failed };
                a.check.source = CheckSource::Observed;
                a.check.exit_code = run.exit_code;
                a.check.duration_ms = Some(run.duration.as_millis() as u64);
                a.check.output = Some(run.output).filter(|o| !o.is_empty());
            }
        }
        let written = a.clone();
        Ok((record, written))
    }

    fn attempt_inner(&mut self, req: &AttemptRequest, ctx: &WriteContext) -> Result<(AddOutcome, Attempt)> {
        let (record, a) = self.prepare_attempt(req, ctx)?;
        let message = format!("neo: attempt {} on task {} ({})", "{id}", a.task, a.check.result);
        Ok((self.write(record, message, ctx)?, a))
    }

    /// Every attempt of `task`, oldest first, with freshness.
    pub fn task_history(&self, task: &str) -> Result<Vec<AttemptView>> {
        let mut out = Vec::new();
        for e in self.state().iter() {
            if let Payload::Attempt(a) = &e.record.payload {
                if a.task == task.trim() {
                    let freshness = freshness(self.store(), a.check.commit.as_deref(), &a.files)?;
                    let fetched_from = self.fetched_from(&e.id).map(str::to_string);
                    out.push(AttemptView { entry: crate::api::view::RecordState::from(e), freshness, fetched_from });
                }
            }
        }
        Ok(out)
    }

    /// What `recheck` would run for `prefix` (an attempt id, or a task id whose latest attempt
    /// with a command is meant): the attempt, its exact command, and whether this clone has run or
    /// approved that command before.
    ///
    /// This is the trust boundary for checks: only an attempt in the local memory's own history
    /// is ever chosen. A fetched copy's attempt (a fork's, a remote's) is refused by name, and a
    /// task's latest attempt is looked for among local ones only, so a fetched record can neither
    /// be run nor be "latest" over local evidence, whatever its `created_at`.
    pub fn recheck_plan(&self, prefix: &str) -> Result<RecheckPlan> {
        let original = match self.resolve("id", prefix) {
            Ok(id) if matches!(self.state().entries[&id].record.payload, Payload::Attempt(_)) => id,
            Ok(id) => return Err(Error::invalid("id", format!("{} is not an attempt", id.short()))),
            Err(e) => {
                // Not an id: a task id, whose latest local attempt with a command is re-checked.
                let latest = self
                    .state()
                    .iter()
                    .filter(|e| self.fetched_from(&e.id).is_none())
                    .filter(|e| matches!(&e.record.payload, Payload::Attempt(a) if a.task == prefix.trim() && a.check.command.is_some()))
                    .last()
                    .map(|e| e.id);
                match latest {
                    Some(id) => id,
                    None => {
                        let fetched = self.state().iter().find(|e| {
                            self.fetched_from(&e.id).is_some()
                                && matches!(&e.record.payload, Payload::Attempt(a) if a.task == prefix.trim())
                        });
                        return Err(match fetched {
                            Some(f) => Error::invalid_with_hint(
                                "id",
                                format!(
                                    "task {} has no attempt with a check in this clone's memory; its only ones were fetched from {} and are never run here",
                                    prefix.trim(),
                                    self.fetched_from(&f.id).unwrap_or("a remote")
                                ),
                                "review them, merge with `git neo sync`, then recheck",
                            ),
                            None => e,
                        });
                    }
                }
            }
        };
        if let Some(from) = self.fetched_from(&original) {
            return Err(Error::invalid_with_hint(
                "id",
                format!(
                    "attempt {} was fetched from {from} and is not in this clone's memory: its check is never run here",
                    original.short()
                ),
                "review it, merge with `git neo sync`, then recheck",
            ));
        }
        let Payload::Attempt(old) = &self.state().entries[&original].record.payload else {
            unreachable!("checked above")
        };
        let Some(command) = old.check.command.clone() else {
            return Err(Error::invalid(
                "id",
                format!("attempt {} recorded no check command to re-run", original.short()),
            ));
        };
        let known = self.store().is_trusted_check(&command);
        Ok(RecheckPlan { attempt: original, command, known })
    }

    /// Re-run the check of an attempt (or of a task's latest attempt with a command) at HEAD:
    /// records a new attempt linked to it, and an outcome for the original. A command new to this
    /// clone runs only when `approved` (the person saw it and said yes); once run, it is known.
    pub fn recheck(
        &mut self,
        prefix: &str,
        shell: &Path,
        timeout: Duration,
        approved: bool,
        ctx: &WriteContext,
    ) -> Result<Recheck> {
        let plan = self.recheck_plan(prefix)?;
        if !plan.known && !approved {
            return Err(Error::invalid_with_hint(
                "yes",
                format!(
                    "the check of attempt {} is new to this clone and was not run: `{}`",
                    plan.attempt.short(),
                    crate::display::escape(&plan.command)
                ),
                "read it, then run again with --yes to run it",
            ));
        }
        let original = plan.attempt;
        let Payload::Attempt(old) = self.state().entries[&original].record.payload.clone() else {
            unreachable!("checked above")
        };
        let command = plan.command;
        self.store().trust_check(&command)?;
        let req = AttemptRequest {
            task: old.task.clone(),
            action: format!("re-check of {}", original.short()),
            observation: "re-ran the recorded check at HEAD".into(),
            inference: None,
            files: old
                .files
                .iter()
                .map(|f| f.path.clone())
                .filter(|p| self.store().work_dir().is_none_or(|w| w.join(p).exists()))
                .collect(),
            check: CheckSpec::Run { command, shell: shell.to_path_buf(), timeout },
            area: Some(old.scope.clone()),
            tags: old.tags.clone(),
            retry_of: Some(original),
            suggestion: None,
        };
        let (attempt, now) = self.prepare_attempt(&req, ctx)?;
        let (signal, delta) = match (old.check.result, now.check.result) {
            (CheckResult::Passed, CheckResult::Passed) => ("recheck-passed", Milli(50)),
            (CheckResult::Passed, _) => ("regression", Milli(-200)),
            (_, CheckResult::Passed) => ("recheck-passed", Milli(0)),
            _ => ("recheck-failed", Milli(-50)),
        };
        let head = now.check.commit.clone().unwrap_or_default();
        let outcome = Record {
            kind: Kind::Outcome,
            payload: Payload::Outcome(Outcome {
                target: original,
                signal: signal.into(),
                delta,
                commits: now.check.commit.iter().cloned().collect(),
                paths: Vec::new(),
                key: format!("{}:{}:{signal}", original.to_hex(), head),
            }),
            author: ctx.identity.author_field(),
            created_at: ctx.now,
            body: String::new(),
        };
        // The new attempt and the outcome it is evidence of land in one commit.
        let outcome_id = outcome.encode().0;
        let message =
            format!("neo: re-check of attempt {} ({}): {signal} ({{id}})", original.short(), now.check.result);
        let new = self.write_all(vec![attempt, outcome], message, ctx)?;
        Ok(Recheck { attempt: new, outcome: outcome_id, signal, delta: delta.as_f64(), result: now.check.result })
    }
}

/// What `recheck` wrote: the new attempt (and the commit holding it and the outcome) and the
/// outcome on the original.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Recheck {
    pub attempt: AddOutcome,
    /// The outcome record on the original attempt.
    pub outcome: RecordId,
    pub signal: &'static str,
    pub delta: f64,
    /// The check's result now.
    pub result: CheckResult,
}

/// What `recheck` would run, for the front end to show before it runs (see
/// `Memory::recheck_plan`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct RecheckPlan {
    /// The attempt whose check is re-run.
    pub attempt: RecordId,
    /// The exact command, as recorded.
    pub command: String,
    /// Whether this clone ran or approved this command before (a new one needs approval).
    pub known: bool,
}
