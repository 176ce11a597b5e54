//! `git neo scopes` and `git neo session start|list|promote|drop`: the scopes memory lives in
//! (docs/scopes.md) and an agent's working sessions.

use super::Ctx;
use git_neo::api::LiveKey;
use git_neo::Error;

#[derive(clap::Args)]
pub struct ScopesArgs {
    /// Do not ask the remotes whether they answer (no network).
    #[arg(long)]
    offline: bool,
}

#[derive(clap::Subcommand)]
pub enum SessionCommand {
    /// Start a working session (refs/neo/sessions/<name>) and make it current: `--scope session`
    /// then writes there.
    Start {
        /// Its name (default: made from the time).
        name: Option<String>,
    },
    /// The sessions of this clone; the current one is marked.
    List,
    /// Take in what changed in memory since this worktree's session (or a prompt-hook
    /// conversation) started: recall answers at its start until then, and says it is stale.
    Refresh {
        /// A prompt-hook conversation, by the agent's id for it (default: the current session).
        #[arg(long, value_name = "ID")]
        conversation: Option<String>,
    },
    /// Move a session's valid facts to another scope as new records naming where they came
    /// from, then drop the session.
    Promote {
        /// The session (default: the current one).
        name: Option<String>,
        /// Where the facts go: project (default), user or org.
        #[arg(long, default_value = "project")]
        to: String,
        /// Keep the session afterwards.
        #[arg(long)]
        keep: bool,
    },
    /// Delete a session's ref (and nothing else).
    Drop {
        /// The session (default: the current one).
        name: Option<String>,
    },
}

pub fn scopes(ctx: &mut Ctx, args: ScopesArgs) -> Result<(), Error> {
    let infos = ctx.session.scopes(!args.offline)?;
    if ctx.out.json {
        ctx.out.json(&infos);
        return Ok(());
    }
    let now = ctx.session.now();
    for i in infos {
        let state = if !i.exists {
            "not created yet".to_string()
        } else {
            format!(
                "{} records{}",
                i.records,
                i.tip.as_deref().map(|t| format!(" at {}", &t[..12.min(t.len())])).unwrap_or_default()
            )
        };
        ctx.out.line(&format!("{:<16} {state}", i.scope));
        ctx.out.line(&format!("  location: {}", i.location));
        if let Some(r) = &i.remote {
            let reach = match i.reachable {
                Some(true) => ", reachable",
                Some(false) => ", NOT reachable",
                None => "",
            };
            ctx.out.line(&format!("  remote:   {r}{reach}"));
        }
        if matches!(i.scope.as_str(), "user" | "org") && i.exists {
            let when = match i.last_sync {
                Some(t) => format!("{t} ({})", super::age_words(now.0 - t.0)),
                None => "never".into(),
            };
            ctx.out.line(&format!("  fetched:  {when}"));
        }
        if let Some(m) = i.mode {
            ctx.out.line(&format!(
                "  writes:   {}",
                serde_json::to_value(m).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
            ));
        }
        if let Some(p) = &i.problem {
            ctx.out.warn(&format!("{}: {p}", i.scope));
        }
    }
    Ok(())
}

/// The session a command names, or the current one.
fn named(ctx: &Ctx, name: Option<String>) -> Result<String, Error> {
    match name.or_else(|| ctx.session.current_session()) {
        Some(n) => Ok(n),
        None => Err(Error::invalid("name", "no session is current here; name one (`git neo session list` shows them)")),
    }
}

pub fn session(ctx: &mut Ctx, command: SessionCommand) -> Result<(), Error> {
    match command {
        SessionCommand::Start { name } => {
            let name = ctx.session.start_session(name.as_deref())?;
            // Recall in this worktree now answers at what the session starts from.
            ctx.session.begin_kept_live(&LiveKey::Working(name.clone()))?;
            if ctx.out.json {
                ctx.out.json(&serde_json::json!({"session": name, "scope": format!("session:{name}")}));
            } else {
                ctx.out.line(&format!("started session:{name} (current here; write to it with --scope session)"));
            }
        }
        SessionCommand::List => {
            let (sessions, current) = ctx.session.sessions()?;
            if ctx.out.json {
                let list: Vec<_> = sessions
                    .iter()
                    .map(|s| {
                        serde_json::json!({
                            "name": s.name,
                            "records": s.records,
                            "current": current.as_deref() == Some(s.name.as_str()),
                            "current_in": s.current_in,
                        })
                    })
                    .collect();
                ctx.out.json(&list);
            } else {
                for s in sessions {
                    let mark = if current.as_deref() == Some(s.name.as_str()) { "*" } else { " " };
                    let places: Vec<String> = s.current_in.iter().map(|p| p.display().to_string()).collect();
                    let at =
                        if places.is_empty() { String::new() } else { format!(", current in {}", places.join(", ")) };
                    ctx.out.line(&format!("{mark} {} ({} records{at})", s.name, s.records));
                }
            }
        }
        SessionCommand::Promote { name, to, keep } => {
            let name = named(ctx, name)?;
            let to = ctx.session.places().parse(&to).map_err(|e| match e {
                Error::Invalid(p) => Error::invalid("to", p.to_string().trim_start_matches("scope: ").to_string()),
                e => e,
            })?;
            let p = ctx.session.promote(&name, &to, keep)?;
            if p.dropped {
                ctx.session.end_kept_live(&LiveKey::Working(name.clone()))?;
            }
            if ctx.out.json {
                ctx.out.json(&p);
            } else {
                let new = p.facts.iter().filter(|f| !f.outcome.deduplicated).count();
                ctx.out.line(&format!(
                    "promoted {} facts of session:{} to {} ({new} new, {} already there){}",
                    p.facts.len(),
                    p.session,
                    p.to,
                    p.facts.len() - new,
                    if p.dropped { "; the session is dropped" } else { "" }
                ));
                for f in &p.facts {
                    ctx.out.line(&format!("  {} -> {}", f.from.short(), f.outcome.id.short()));
                }
            }
        }
        SessionCommand::Refresh { conversation } => {
            let key = match conversation {
                Some(c) => LiveKey::Conversation(c),
                None => LiveKey::Working(named(ctx, None)?),
            };
            let r = ctx.session.refresh_kept_live(&key)?;
            if ctx.out.json {
                ctx.out.json(&r);
            } else {
                match &r.taken_in {
                    Some(s) => ctx.out.line(&format!("took in: {}", git_neo::display::escape(&s.summary))),
                    None => ctx.out.line("nothing had changed since the session started"),
                }
            }
        }
        SessionCommand::Drop { name } => {
            let name = named(ctx, name)?;
            ctx.session.end_kept_live(&LiveKey::Working(name.clone()))?;
            let dropped = ctx.session.drop_session(&name)?;
            if ctx.out.json {
                ctx.out.json(&serde_json::json!({"session": name, "dropped": dropped}));
            } else if dropped {
                ctx.out.line(&format!("dropped session:{name}"));
            } else {
                return Err(Error::invalid("name", format!("there is no session {name:?}")));
            }
        }
    }
    Ok(())
}
