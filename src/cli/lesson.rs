//! `git neo lesson propose|list|apply|restore`: procedural lessons as reviewable patches to the
//! project's instruction files (docs/lessons.md). Proposing writes a memory record only; `apply`
//! and `restore` are the only commands that write a work-tree file, and they say so.

use super::Ctx;
use git_neo::api::{LessonEdit, LessonRequest, LessonStatus, LessonView, WorkTreeEdit};
use git_neo::Error;

#[derive(clap::Subcommand)]
pub enum LessonCommand {
    /// Propose a lesson: a patch to AGENTS.md, CLAUDE.md, GEMINI.md,
    /// .github/copilot-instructions.md, a .cursor/rules file or a .claude/skills/**/SKILL.md.
    Propose(ProposeArgs),
    /// Every lesson with where it stands (proposed, applied, restored, rejected).
    List {
        /// Only lessons with this status.
        #[arg(long)]
        status: Option<String>,
        /// Print each lesson's diff too.
        #[arg(long)]
        diff: bool,
    },
    /// Write a lesson into its file (only while the file is what the lesson was made from).
    Apply {
        /// Id (or unique prefix) of the lesson.
        id: String,
        /// Say what would be written, write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Put a file back as it was before a lesson was applied (only while it is still what was
    /// applied, and only with --yes).
    Restore {
        /// Id (or unique prefix) of the lesson.
        id: String,
        /// Really write the file back.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(clap::Args)]
pub struct ProposeArgs {
    /// The instruction file, relative to the repository root.
    #[arg(long, default_value = "AGENTS.md")]
    file: String,
    /// The lesson, added to git-neo's section of lessons in the file (append-only).
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["from", "replace"])]
    append: Option<String>,
    /// Take the lesson from this fact, failure or attempt (and rest it on that record).
    #[arg(long, value_name = "ID", conflicts_with = "replace")]
    from: Option<String>,
    /// Rewrite: replace this text of the file (its first occurrence)…
    #[arg(long, value_name = "TEXT", requires = "with")]
    replace: Option<String>,
    /// …with this text.
    #[arg(long, value_name = "TEXT", requires = "replace")]
    with: Option<String>,
    /// Records the lesson rests on (ids, repeatable).
    #[arg(long = "because", value_name = "ID")]
    because: Vec<String>,
    /// Why, in one line (default: the lesson's text).
    #[arg(long)]
    reason: Option<String>,
    /// Print the plan (the commit and its record) and write nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn lesson(ctx: &mut Ctx, command: LessonCommand) -> Result<(), Error> {
    match command {
        LessonCommand::Propose(a) => propose(ctx, a),
        LessonCommand::List { status, diff } => list(ctx, status.as_deref(), diff),
        LessonCommand::Apply { id, dry_run } => {
            let edit = ctx.session.dry_run(dry_run, |s| s.apply_lesson(&id))?;
            written(ctx, &edit)
        }
        LessonCommand::Restore { id, yes } => {
            let edit = ctx.session.restore_lesson(&id, yes)?;
            written(ctx, &edit)
        }
    }
}

fn propose(ctx: &mut Ctx, a: ProposeArgs) -> Result<(), Error> {
    let mut because = Vec::new();
    for b in &a.because {
        because.push(ctx.session.resolve_id("because", b)?);
    }
    let edit = match (a.append, a.from, a.replace, a.with) {
        (Some(text), None, None, None) => LessonEdit::Append(text),
        (None, Some(from), None, None) => {
            let (text, id) = ctx.session.lesson_text_of(&from)?;
            because.insert(0, id);
            LessonEdit::Append(text)
        }
        (None, None, Some(old), Some(new)) => LessonEdit::Replace { old, new },
        _ => return Err(Error::invalid("lesson", "say it with --append TEXT, --from ID, or --replace OLD --with NEW")),
    };
    because.dedup();
    let req = LessonRequest { file: a.file, edit, because, reason: a.reason };
    let p = ctx.session.dry_run(a.dry_run, |s| s.propose_lesson(&req))?;
    if ctx.out.json {
        ctx.out.json(&p);
        return Ok(());
    }
    if let Some(plan) = &p.outcome.plan {
        ctx.show_plan(plan);
        return Ok(());
    }
    ctx.out.line(&p.outcome.id.to_hex());
    let where_ = if p.outcome.proposed { "in the review-mode proposals" } else { "in memory" };
    ctx.out.note(&format!(
        "proposed lesson {} for {} ({}) {where_}",
        p.outcome.id.short(),
        p.lesson.file,
        p.lesson.change
    ));
    match &p.applied {
        Some(edit) => {
            ctx.out.note(&format!("neo.lessons.mode=auto: applied it, and wrote {} in the work tree", edit.file))
        }
        None => ctx.out.note(&format!(
            "nothing in the work tree changed; review it (`git neo show {}`), then `git neo lesson apply {}`",
            p.outcome.id.short(),
            p.outcome.id.short()
        )),
    }
    Ok(())
}

fn list(ctx: &mut Ctx, status: Option<&str>, diff: bool) -> Result<(), Error> {
    let wanted = match status {
        None => None,
        Some(s) => Some(match s.trim() {
            "proposed" => LessonStatus::Proposed,
            "applied" => LessonStatus::Applied,
            "restored" => LessonStatus::Restored,
            "rejected" => LessonStatus::Rejected,
            other => {
                return Err(Error::invalid(
                    "status",
                    format!("{other:?} is not a status; use proposed, applied, restored or rejected"),
                ))
            }
        }),
    };
    let lessons: Vec<LessonView> =
        ctx.session.lessons()?.into_iter().filter(|l| wanted.is_none_or(|w| l.status == w)).collect();
    if ctx.out.json {
        ctx.out.json(&lessons);
        return Ok(());
    }
    if lessons.is_empty() {
        ctx.out.note("no lessons");
    }
    for l in &lessons {
        let status = l.status.as_str();
        ctx.out.line(&format!(
            "{} {status:<8} {} ({}) {}",
            l.id.short(),
            l.file,
            l.change,
            git_neo::display::escape(&l.reason)
        ));
        if let Some(why) = &l.invalid {
            ctx.out.warn(&format!("lesson {} is invalid: {why}", l.id.short()));
        }
        if diff {
            for line in l.diff.lines() {
                ctx.out.line(&format!("    {}", git_neo::display::escape(line)));
            }
        }
    }
    Ok(())
}

fn written(ctx: &mut Ctx, edit: &WorkTreeEdit) -> Result<(), Error> {
    if ctx.out.json {
        ctx.out.json(edit);
        return Ok(());
    }
    for line in edit.diff.lines() {
        ctx.out.line(&git_neo::display::escape(line));
    }
    if edit.dry_run {
        ctx.out.note(&format!(
            "dry run: lesson {} would be {} to {}; nothing written",
            edit.id.short(),
            edit.action,
            edit.file
        ));
    } else {
        ctx.out.note(&format!("lesson {} {}: wrote {} in the work tree", edit.id.short(), edit.action, edit.file));
    }
    Ok(())
}
