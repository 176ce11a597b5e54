//! `git neo stats`: recall telemetry (counts, latency, hit rate, what is retrieved and what never
//! is) and the size of every scope's memory against its curation cap.

use super::Ctx;
use git_neo::api::Retrieved;
use git_neo::Error;

pub fn run(ctx: &mut Ctx) -> Result<(), Error> {
    let s = ctx.session.stats()?;
    if ctx.out.json {
        ctx.out.json(&s);
        return Ok(());
    }
    if !s.telemetry {
        ctx.out.line("telemetry: off (neo.telemetry); no recall statistics are kept");
    } else {
        let fronts: Vec<String> = s.by_front.iter().map(|(f, n)| format!("{f} {n}")).collect();
        ctx.out.line(&format!(
            "recalls: {}{}{}",
            s.recalls,
            if fronts.is_empty() { String::new() } else { format!(" ({})", fronts.join(", ")) },
            if s.queries_kept { "" } else { "; query text not kept" }
        ));
        if s.recalls > 0 {
            let l = &s.latency_ms;
            ctx.out.line(&format!(
                "latency: p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
                l.p50, l.p90, l.p99, l.max
            ));
            ctx.out.line(&format!(
                "hit rate: {:.0}% returned a fact, attempt or known unknown matching the question; {:.0} tokens on average",
                s.hit_rate * 100.0,
                s.mean_tokens
            ));
        }
    }
    let show = |ctx: &mut Ctx, title: &str, list: &[Retrieved]| {
        if list.is_empty() {
            return;
        }
        ctx.out.line(title);
        for r in list {
            ctx.out.line(&format!(
                "  {} [{}] {}x, {} success{}, confidence {:.2}  {}",
                &r.id[..12],
                r.scope,
                r.retrievals,
                r.successes,
                if r.successes == 1 { "" } else { "es" },
                r.confidence,
                r.subject
            ));
        }
    };
    show(ctx, "most retrieved:", &s.most_retrieved);
    show(ctx, &format!("retrieved {}+ times without a success (curate demotes them):", s.demote_after), &s.unhelpful);
    if s.telemetry {
        if s.constraints_shown > 0 {
            ctx.out.line(&format!("constraints: {}, shown by every recall", s.constraints_shown));
        }
        ctx.out.line(&format!("never retrieved: {} current facts (constraints aside)", s.never_retrieved));
        show(ctx, "  the oldest of them:", &s.never_retrieved_oldest);
    }
    if let Some(longest) = s.longest_unconfirmed.first() {
        ctx.out.line(&format!(
            "unconfirmed: {} current fact{} unchecked for {}+ days (longest {} days); `git neo confirm ID` records a check",
            s.unconfirmed_long,
            if s.unconfirmed_long == 1 { "" } else { "s" },
            git_neo::recall::UNCONFIRMED_NOTE_DAYS,
            longest.unconfirmed_days
        ));
        for r in s.longest_unconfirmed.iter().take(5).filter(|r| r.unconfirmed_days > 0) {
            ctx.out.line(&format!("  {} [{}] {} days  {}", &r.id[..12], r.scope, r.unconfirmed_days, r.subject));
        }
    }
    ctx.out.line("memory:");
    for sc in &s.scopes {
        let types: Vec<String> = sc.facts.iter().map(|(t, n)| format!("{t} {n}")).collect();
        ctx.out.line(&format!(
            "  {:<14} {} current facts of cap {}{}; {} attempts; {} records",
            sc.scope,
            sc.current_facts,
            sc.cap,
            if types.is_empty() { String::new() } else { format!(" ({})", types.join(", ")) },
            sc.attempts,
            sc.records
        ));
    }
    Ok(())
}
