//! What a session reads of its memories for a person: the report and the statistics (their
//! data and rendering are `crate::api::inspect`'s).

use crate::api::inspect::report::{
    chains, ended, last_curation, sample_times, telemetry_charts, trajectory, Life, CHAINS, SIZE_POINTS, TRAJECTORIES,
};
use crate::api::inspect::stats::{retrievals, Latency, Retrieved, ScopeSize, Stats};
use crate::api::learn::telemetry::{self};
use crate::api::session::Session;
use crate::config::CurateSettings;
use crate::error::Result;
use crate::record::{Kind, Payload, Timestamp};
use crate::report::{Chart, ReportData, Series, Version};
use crate::state::Status;
use std::collections::BTreeMap;

impl Session {
    /// Everything `git neo report` shows (see the module docs).
    pub fn report_data(&mut self) -> Result<ReportData> {
        // What a recall kept for after its answer is read too.
        self.flush_telemetry();
        let now = self.now();
        let project = self.project_store()?;
        let tel = telemetry::Settings::from_config(&|k| project.config_value(k))?;
        let events = if tel.on { telemetry::read(&project.caches()) } else { Vec::new() };
        let mut summary: Vec<(String, String)> = Vec::new();

        // Lifetimes of every fact of every scope.
        let mut lives: Vec<Life> = Vec::new();
        let mut trajectories: Vec<(usize, Series)> = Vec::new();
        let mut all_chains: Vec<Vec<Version>> = Vec::new();
        for scope in self.places().readable()? {
            let Ok(memory) = self.memory_of(&scope) else { continue };
            let state = memory.state();
            let mut current = 0;
            for e in state.iter() {
                let Some(f) = e.record.as_fact() else { continue };
                current += usize::from(e.status == Status::Valid);
                lives.push(Life {
                    scope: scope.to_string(),
                    fact_type: f.fact_type.to_string(),
                    start: e.record.created_at.0,
                    end: ended(e, state),
                });
                let counted = e.outcomes.len();
                if counted > 0 {
                    trajectories.push((counted, trajectory(memory, e, &f.subject)?));
                }
            }
            summary
                .push((format!("{scope} memory"), format!("{current} current facts, {} records", state.entries.len())));
            all_chains.extend(chains(state, CHAINS));
        }

        let mut charts = Vec::new();
        let t0 = lives.iter().map(|l| l.start).min();
        // Current facts stay current until now: the axis runs to the report's time.
        let t1 = lives.iter().flat_map(|l| [Some(l.start), l.end]).flatten().max().map(|t| t.max(now.0));
        // No fact yet: the charts are there, empty, saying so (never an axis from 1970).
        let times = match (t0, t1) {
            (Some(t0), Some(t1)) => sample_times(t0, t1, SIZE_POINTS),
            _ => Vec::new(),
        };
        let count = |keep: &dyn Fn(&Life) -> bool, t: i64| {
            lives.iter().filter(|l| keep(l) && l.start <= t && l.end.is_none_or(|end| end > t)).count() as f64
        };
        let no_facts = "No facts yet: they appear here once `git neo add` or `git neo import` writes some.";
        // Facts current at each time, one series per value of `key` (a type, a scope).
        let size_chart = |id: &str, title: &str, key: fn(&Life) -> &str| {
            let names: std::collections::BTreeSet<&str> = lives.iter().map(key).collect();
            Chart {
                id: id.into(),
                step: true,
                title: title.into(),
                y_label: "facts".into(),
                y_max: None,
                series: names
                    .iter()
                    .map(|name| Series {
                        name: name.to_string(),
                        points: times.iter().map(|&t| (t, count(&|l| key(l) == *name, t))).collect(),
                    })
                    .collect(),
                empty: no_facts.into(),
            }
        };
        charts.push(size_chart("size-type", "Current facts over time, by type (every scope)", |l| &l.fact_type));
        charts.push(size_chart("size-scope", "Current facts over time, by scope", |l| &l.scope));
        trajectories.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.name.cmp(&b.1.name)));
        charts.push(Chart {
            id: "confidence".into(),
            step: true,
            title: format!("Confidence of the {TRAJECTORIES} facts outcomes moved most"),
            y_label: "confidence".into(),
            y_max: Some(1.0),
            series: trajectories.into_iter().take(TRAJECTORIES).map(|(_, s)| s).collect(),
            empty: "No outcome has moved a fact's confidence yet: `git neo outcomes` reads later commits for evidence."
                .into(),
        });

        charts.extend(telemetry_charts(&events, tel.on, &mut summary));
        let lessons = self.lesson_rows(&mut summary);
        all_chains.sort_by_key(|c| std::cmp::Reverse(c.len()));
        all_chains.truncate(CHAINS);
        Ok(ReportData {
            title: format!(
                "git-neo memory report{}",
                project
                    .work_dir()
                    .and_then(|d| d.file_name())
                    .map(|n| format!(": {}", n.to_string_lossy()))
                    .unwrap_or_default()
            ),
            generated: Timestamp(now.0).to_string(),
            summary,
            charts,
            chains: all_chains,
            curation: last_curation(&project.caches().last_curation()),
            lessons,
        })
    }

    /// The project's lessons, newest first, and their counts as a summary line.
    fn lesson_rows(&mut self, summary: &mut Vec<(String, String)>) -> Vec<crate::report::LessonRow> {
        let mut lessons = Vec::new();
        if let Ok(memory) = self.memory_of(&crate::scope::Scope::Project) {
            let c = crate::api::learn::lessons::counts(memory.state());
            if c != crate::api::learn::lessons::LessonCounts::default() {
                summary.push((
                    "lessons".into(),
                    format!(
                        "{} proposed (waiting), {} applied, {} restored, {} rejected",
                        c.proposed, c.applied, c.restored, c.rejected
                    ),
                ));
            }
            for l in memory.lessons().into_iter().rev() {
                lessons.push(crate::report::LessonRow {
                    id: l.id.short(),
                    file: l.file,
                    status: l.status.as_str().to_string(),
                    reason: l.reason,
                });
            }
        }
        lessons
    }
}

impl Session {
    /// Recall telemetry and memory sizes (see the module docs).
    pub fn stats(&mut self) -> Result<Stats> {
        // What a recall kept for after its answer is read too.
        self.flush_telemetry();
        let project = self.project_store()?;
        let settings = telemetry::Settings::from_config(&|k| project.config_value(k))?;
        let curate = CurateSettings::from_config(&|k| project.config_value(k))?;
        let events = if settings.on { telemetry::read(&project.caches()) } else { Vec::new() };
        let counts = retrievals(&events, None);
        let now = self.now();

        let mut by_front: BTreeMap<String, usize> = BTreeMap::new();
        for e in &events {
            *by_front.entry(e.front.as_str().to_string()).or_default() += 1;
        }
        let hits = events.iter().filter(|e| e.hit()).count();
        let recalls = events.len();
        let mut stats = Stats {
            telemetry: settings.on,
            queries_kept: settings.queries,
            recalls,
            by_front,
            since: events.first().map(|e| e.at),
            until: events.last().map(|e| e.at),
            latency_ms: Latency::of(events.iter().map(|e| e.latency_ms).collect()),
            hit_rate: if recalls == 0 { 0.0 } else { hits as f64 / recalls as f64 },
            mean_tokens: if recalls == 0 {
                0.0
            } else {
                events.iter().map(|e| e.tokens as f64).sum::<f64>() / recalls as f64
            },
            most_retrieved: Vec::new(),
            longest_unconfirmed: Vec::new(),
            unconfirmed_long: 0,
            constraints_shown: 0,
            never_retrieved: 0,
            never_retrieved_oldest: Vec::new(),
            unhelpful: Vec::new(),
            demote_after: curate.demote_after,
            scopes: Vec::new(),
        };

        let mut current = Vec::new();
        for scope in self.places().readable()? {
            let Ok(memory) = self.memory_of(&scope) else { continue };
            let mut size = ScopeSize {
                scope: scope.to_string(),
                facts: BTreeMap::new(),
                current_facts: 0,
                attempts: 0,
                records: memory.state().entries.len(),
                cap: curate.cap(scope.default_area()),
            };
            for e in memory.state().iter().filter(|e| e.status == Status::Valid) {
                match &e.record.payload {
                    Payload::Fact(f) => {
                        *size.facts.entry(f.fact_type.to_string()).or_default() += 1;
                        size.current_facts += 1;
                        if f.fact_type == crate::record::FactType::Constraint {
                            stats.constraints_shown += 1;
                            continue;
                        }
                        current.push((
                            e.record.created_at,
                            Retrieved {
                                retrievals: counts.get(&e.id).copied().unwrap_or(0),
                                id: e.id.to_hex(),
                                scope: scope.to_string(),
                                subject: f.subject.clone(),
                                successes: e.successes,
                                confidence: e.confidence.as_f64(),
                                unconfirmed_days: e.unconfirmed_days(now),
                            },
                        ));
                    }
                    _ if e.record.kind == Kind::Attempt => size.attempts += 1,
                    _ => {}
                }
            }
            stats.scopes.push(size);
        }
        let mut most: Vec<&Retrieved> = current.iter().map(|(_, r)| r).filter(|r| r.retrievals > 0).collect();
        most.sort_by(|a, b| b.retrievals.cmp(&a.retrievals).then(a.id.cmp(&b.id)));
        stats.most_retrieved = most.iter().take(10).map(|r| (*r).clone()).collect();
        stats.unhelpful = most
            .iter()
            .filter(|r| r.retrievals as u64 >= curate.demote_after && r.successes == 0)
            .map(|r| (*r).clone())
            .collect();
        let mut unchecked: Vec<&Retrieved> = current.iter().map(|(_, r)| r).collect();
        unchecked.sort_by(|a, b| b.unconfirmed_days.cmp(&a.unconfirmed_days).then(a.id.cmp(&b.id)));
        stats.unconfirmed_long =
            unchecked.iter().filter(|r| r.unconfirmed_days >= crate::recall::UNCONFIRMED_NOTE_DAYS).count();
        stats.longest_unconfirmed = unchecked.iter().take(10).map(|r| (*r).clone()).collect();
        if settings.on {
            let mut never: Vec<&(crate::record::Timestamp, Retrieved)> =
                current.iter().filter(|(_, r)| r.retrievals == 0).collect();
            never.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.id.cmp(&b.1.id)));
            stats.never_retrieved = never.len();
            stats.never_retrieved_oldest = never.iter().take(10).map(|(_, r)| r.clone()).collect();
        }
        Ok(stats)
    }
}
