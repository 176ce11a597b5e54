//! Recall as markdown: what an agent reads at the start of a task.

use super::{Item, LayerKind, Recall};
use crate::markdown::md;
use std::fmt::Write;

/// Where an item came from, after its id: every item when several scopes were read (`all`),
/// else only one from another scope than the project.
fn mark(i: &Item, all: bool) -> String {
    if all || i.scope != "project" {
        format!(" [{}]", md(&i.scope))
    } else {
        String::new()
    }
}

fn line(s: &mut String, i: &Item, with_body: bool, all: bool) {
    let _ = write!(s, "- **{}** `{}`{}", md(&i.subject), i.id.short(), mark(i, all));
    if i.kind == crate::record::Kind::Fact {
        let _ = write!(s, " (confidence {:.2}", i.confidence);
        if i.successes > 0 {
            let _ = write!(s, ", {} {}", i.successes, if i.successes == 1 { "success" } else { "successes" });
        }
        s.push(')');
    }
    s.push('\n');
    extras(s, i);
    if with_body && !i.body.is_empty() {
        // A long body found by one of its passages: show that passage, and say where it is.
        let (from, to) = match &i.passage {
            Some(p) => {
                let _ = writeln!(s, "  _(lines {}–{} of the body matched)_", p.lines[0], p.lines[1]);
                (p.lines[0].max(1) - 1, p.lines[1])
            }
            None => (0, usize::MAX),
        };
        for l in i.body.lines().skip(from).take(to.saturating_sub(from).min(12)) {
            let _ = writeln!(s, "  {l}");
        }
    }
}

/// Review flags, citations and linked facts, indented under an item.
fn extras(s: &mut String, i: &Item) {
    if i.new_since_session {
        let _ = writeln!(s, "  - new since this session started (not yet taken in)");
    }
    for c in &i.cites {
        let lines = c.lines.map(|[a, b]| format!(" (lines {a}–{b})")).unwrap_or_default();
        let _ = writeln!(s, "  - cites `{}#{}`{lines}", md(&c.path), md(&c.section));
    }
    for r in &i.needs_review {
        let _ = writeln!(s, "  - ⚠ needs review: {}", md(r));
    }
    if let Some(days) = i.unconfirmed_days.filter(|d| *d >= super::UNCONFIRMED_NOTE_DAYS) {
        let _ = writeln!(s, "  - unconfirmed for {days} days (`git neo confirm {}` once checked)", i.id.short());
    }
    for o in &i.overrides {
        let _ = writeln!(
            s,
            "  - {} note overrides {} fact `{}`: {} (the same key)",
            i.scope,
            o.scope,
            o.id.short(),
            md(&o.subject)
        );
    }
    if !i.same_words.is_empty() {
        let ids: Vec<String> = i.same_words.iter().take(8).map(|id| format!("`{}`", id.short())).collect();
        let more = i.same_words.len().saturating_sub(8);
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        let _ = writeln!(s, "  - also said in the same words by {}{more}", ids.join(", "));
    }
    for l in &i.linked {
        let status =
            if l.status == crate::state::Status::Valid { String::new() } else { format!(" ({})", l.status.as_str()) };
        let _ = writeln!(s, "  - {} **{}** `{}`{status}", l.relation, md(&l.subject), l.id.short());
    }
}

/// An invalidated fact: struck through, with what replaced it and why.
fn invalidated(s: &mut String, i: &Item, all: bool) {
    let _ = write!(s, "- ~~{}~~ `{}`{}", md(&i.subject), i.id.short(), mark(i, all));
    for rep in &i.replaced_by {
        match (&rep.subject, rep.id) {
            (Some(sub), Some(id)) => {
                let _ = write!(s, " → **{}** `{}`: {}", md(sub), id.short(), md(&rep.reason));
            }
            _ => {
                let _ = write!(s, " (outdated: {})", md(&rep.reason));
            }
        }
    }
    if let Some(w) = &i.window {
        let _ = write!(s, " ({})", md(w));
    }
    s.push('\n');
    extras(s, i);
}

/// The recall as markdown.
pub fn markdown(r: &Recall) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Memory for: {}\n", md(&r.query));
    if !r.semantic {
        let _ = writeln!(s, "_Lexical recall only (no embedding model installed)._\n");
    }
    if let Some(stale) = &r.stale {
        // The constraints below are the session's own, as they stood; this says what is newer.
        // The summary quotes records (a stranger's text); the refresh hint is the front end's own.
        let _ = writeln!(s, "> **Stale:** {}. {}\n", md(&stale.summary), stale.refresh);
    }
    // Every item says its scope when several were read; a single scope other than the project
    // is said here too.
    let all = r.scopes.len() > 1;
    if all || r.scopes.first().is_some_and(|s| s != "project") {
        let _ = writeln!(s, "_Scopes read: {}; each item says which it came from._\n", r.scopes.join(", "));
    }
    for layer in LayerKind::ALL {
        let mut section = String::new();
        match layer {
            LayerKind::Constraints | LayerKind::KnownUnknowns => {
                for i in r.items(layer) {
                    line(&mut section, i, true, all);
                }
            }
            LayerKind::Facts => {
                for i in r.items(layer) {
                    let t = i.fact_type.map(|t| t.to_string()).unwrap_or_default();
                    let _ = write!(section, "- _{t}_ ");
                    let mut one = String::new();
                    line(&mut one, i, true, all);
                    section.push_str(one.trim_start_matches("- "));
                }
            }
            LayerKind::Attempts => {
                for i in r.items(layer) {
                    let _ = writeln!(
                        section,
                        "- task {}: {} `{}`{} (check {}; {}; task's latest: {})",
                        md(i.task.as_deref().unwrap_or("")),
                        md(&i.subject),
                        i.id.short(),
                        mark(i, all),
                        i.check.as_deref().unwrap_or("unverified"),
                        md(i.freshness.as_deref().unwrap_or("freshness unknown")),
                        i.task_status.as_deref().unwrap_or("unknown")
                    );
                }
            }
            LayerKind::Invalidated => {
                for i in r.items(layer) {
                    invalidated(&mut section, i, all);
                }
            }
            LayerKind::Documents => {
                for d in r.documents() {
                    let _ = writeln!(
                        section,
                        "- **{}** `{}` (lines {}–{})",
                        md(&d.heading),
                        md(&d.path),
                        d.lines[0],
                        d.lines[1]
                    );
                    for l in d.excerpt.lines().filter(|l| !l.trim().is_empty()).take(8) {
                        let _ = writeln!(section, "  {l}");
                    }
                }
            }
            LayerKind::Construct => {
                for h in r.patterns() {
                    let intent = h.intent.split_whitespace().collect::<Vec<_>>().join(" ");
                    let _ = writeln!(section, "- **{}** `{}`: {}", md(&h.title), h.name, md(&intent));
                }
            }
        }
        if !section.is_empty() {
            let _ = writeln!(s, "## {}\n", layer.heading());
            s.push_str(&section);
            s.push('\n');
        }
    }
    if r.memory_is_silent() {
        let _ = writeln!(s, "_Nothing in memory matches._\n");
    }
    if r.cut > 0 {
        let _ = writeln!(
            s,
            "_Cut to the {}-token budget: {} more item(s) not shown; raise --budget to see them._",
            r.budget, r.cut
        );
    }
    let _ = write!(s, "_Familiarity: {}_", r.familiarity.level);
    s.push('\n');
    s
}
