//! PURE. Every `neo.*` git configuration key git-neo reads, its default, and how its value is
//! parsed. The store reads raw values from git config ([`crate::store::Store::config_value`]);
//! this module is the one place that names the keys and says what a valid value is, so the
//! README's configuration table, the errors and the code cannot drift apart.

use crate::error::{Error, Result};
use crate::record::FactType;

/// The memory ref (`refs/heads/neo-memory` by default).
pub const REF: &str = "neo.ref";
/// How long a writer waits for the ref lock, in milliseconds.
pub const LOCK_TIMEOUT: &str = "neo.lockTimeout";
/// Seconds one fetch or push of `sync` may take before it is stopped (default 120).
pub const SYNC_TIMEOUT: &str = "neo.sync.timeout";
/// What `sync` does with a remote memory history rewritten without a `Neo-Purge` note: `warn`
/// (the default: merge, push the dropped records back, and say so) or `refuse`.
pub const SYNC_REWRITES: &str = "neo.sync.rewrites";
/// How writes are handled: `auto`, `review` or `off`.
pub const MODE: &str = "neo.mode";
/// The project's own Construct patterns, relative to the work tree.
pub const CONSTRUCT_DIR: &str = "neo.construct.dir";
/// The default of [`CONSTRUCT_DIR`].
pub const DEFAULT_CONSTRUCT_DIR: &str = ".neo/construct";
/// Outcomes one scan writes at most.
pub const OUTCOMES_MAX_PER_SCAN: &str = "neo.outcomes.maxPerScan";
/// Outcomes per record per commit day at most.
pub const OUTCOMES_MAX_PER_RECORD_PER_DAY: &str = "neo.outcomes.maxPerRecordPerDay";
/// Later commits a trailer-linked commit must survive to count as accepted.
pub const OUTCOMES_SURVIVE_COMMITS: &str = "neo.outcomes.surviveCommits";

/// How much memory the user's background server keeps for the repositories it holds warm before
/// it lets the least recently used go (a size: `512m`, `1g`, or bytes; the model is not counted).
pub const SERVER_MEMORY: &str = "neo.server.memory";
/// The default of `SERVER_MEMORY`: 512 MiB.
pub const DEFAULT_SERVER_MEMORY: u64 = 512 << 20;

/// Whether a write supersedes, by the frame rule, a current fact it updates without a key or an
/// id (`true` by default; docs/supersession.md).
pub const UPDATES_FRAME: &str = "neo.updates.frame";
/// What happens to a lesson patch (`off`, `review` (default), `auto`: append-only patches are
/// applied to the work tree as they are proposed; every other waits for `git neo lesson apply`).
pub const LESSONS_MODE: &str = "neo.lessons.mode";

/// How lesson patches are handled ([`LESSONS_MODE`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LessonsMode {
    Off,
    Review,
    Auto,
}

impl LessonsMode {
    /// The mode a configured value names; the error names the key and the values.
    pub fn parse(value: Option<&str>) -> Result<LessonsMode> {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("review") => Ok(LessonsMode::Review),
            Some("off") => Ok(LessonsMode::Off),
            Some("auto") => Ok(LessonsMode::Auto),
            Some(v) => Err(Error::Config {
                key: LESSONS_MODE.into(),
                message: format!("{v:?} is not a mode; use off, review or auto"),
            }),
        }
    }
}

/// How recall fuses its lexical and vector lists: `weighted` (default), `weighted:W`, `rrf`,
/// `adaptive` ([`crate::rank::FusionKind::parse`]).
pub const RECALL_FUSION: &str = "neo.recall.fusion";
/// Below what share of the best fact's relevance recall stops adding facts (0 to 1; 0 fills every
/// slot up to `k`): [`DEFAULT_RECALL_FLOOR`].
pub const RECALL_FLOOR: &str = "neo.recall.floor";
/// The floor by default. Measured with `cargo bench --bench quality -- --configs
/// neo.recall.floor=…` (docs/recall.md): at 0.3 and 0.5 every figure of SciFact, CoSQA and both
/// StateBench conversations is unchanged, at 0.7 they fall (StateBench train recall@5 0.85 → 0.53).
/// At 0.5, SciFact questions on the SciFact memory keep 9.55 facts of 10 on average, and on a
/// code memory that cannot answer them 7.7.
pub const DEFAULT_RECALL_FLOOR: f64 = 0.5;

/// When recall expands a first pass once: `true` (a weak one), `disagreement` (only when the
/// lexical and vector lists disagree) or `false`.
pub const RECALL_EXPAND: &str = "neo.recall.expand";

/// When recall expands a first pass once (`RECALL_EXPAND`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ExpandWhen {
    /// Never.
    Never,
    /// When the first pass is weak by either test (a low best cosine, or the two lists
    /// disagreeing).
    #[default]
    Weak,
    /// Only when the two lists disagree (not for a low best cosine alone).
    Disagreement,
}

impl ExpandWhen {
    /// Parse a configuration value: `true`/`weak`, `false`/`never`, `disagreement`.
    pub fn parse(value: &str) -> Option<ExpandWhen> {
        match value.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" | "weak" => Some(ExpandWhen::Weak),
            "false" | "no" | "off" | "0" | "never" => Some(ExpandWhen::Never),
            "disagreement" => Some(ExpandWhen::Disagreement),
            _ => None,
        }
    }
}

/// How recall ranks, from `neo.recall.*`: read once per recall, each key defaulting on its own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecallSettings {
    /// [`RECALL_FUSION`].
    pub fusion: crate::rank::FusionKind,
    /// `RECALL_EXPAND`.
    pub expand: ExpandWhen,
    /// [`RECALL_FLOOR`].
    pub floor: f64,
}

impl RecallSettings {
    /// Read the settings through `value` (a key's configured value, if any); a value that is not
    /// one of the key's words is an error naming the key and what it takes.
    pub fn from_config(value: &dyn Fn(&str) -> Option<String>) -> Result<RecallSettings> {
        let fusion = match value(RECALL_FUSION) {
            None => crate::rank::FusionKind::default(),
            Some(v) => crate::rank::FusionKind::parse(&v).ok_or_else(|| {
                Error::invalid(
                    RECALL_FUSION,
                    format!("{v:?} is not a fusion: use weighted, weighted:W (W from 0 to 1), rrf or adaptive"),
                )
            })?,
        };
        let expand = match value(RECALL_EXPAND) {
            None => ExpandWhen::default(),
            Some(v) => ExpandWhen::parse(&v).ok_or_else(|| {
                Error::invalid(RECALL_EXPAND, format!("{v:?} is not one of true, false, disagreement"))
            })?,
        };
        let floor = match value(RECALL_FLOOR) {
            None => DEFAULT_RECALL_FLOOR,
            Some(v) => v.trim().parse::<f64>().ok().filter(|f| (0.0..=1.0).contains(f)).ok_or_else(|| {
                Error::invalid(RECALL_FLOOR, format!("{v:?} is not a share: use a number from 0 to 1"))
            })?,
        };
        Ok(RecallSettings { fusion, expand, floor })
    }
}

/// The team's memory repository: any git URL (a local path too), or `auto` for the convention
/// on the origin remote's owner ([`crate::scope::org_url_by_convention`]).
pub const ORG_URL: &str = "neo.org.url";
/// How writes to the org memory are taken: `review` (the default: a proposal branch pushed for a
/// pull request), `auto` (pushed to its memory branch) or `off`.
pub const ORG_MODE: &str = "neo.org.mode";
/// How old, in minutes, the org cache may get before a read starts a fetch in the background
/// (default [`DEFAULT_ORG_REFRESH_MINUTES`]; 0 never fetches on read).
pub const ORG_REFRESH_MINUTES: &str = "neo.org.refreshMinutes";
/// The default of [`ORG_REFRESH_MINUTES`].
pub const DEFAULT_ORG_REFRESH_MINUTES: u64 = 60;
/// Where the person's own memory is shared between their machines (a git URL; optional).
pub const USER_URL: &str = "neo.user.url";

/// Local retrieval telemetry in `.git/neo/telemetry/` (`true` by default; `off` writes nothing).
pub const TELEMETRY: &str = "neo.telemetry";
/// Whether telemetry keeps the query text (`true` by default; hashes are always kept).
pub const TELEMETRY_QUERIES: &str = "neo.telemetry.queries";

/// `git neo curate`: the most current facts a scope keeps (`neo.curate.cap.<scope>`, where
/// `<scope>` is `project`, `user`, `org` or `session`).
pub const CURATE_CAP_PREFIX: &str = "neo.curate.cap.";
/// Tags whose facts curation never removes, besides `seed`, `community` and `synthesized`
/// (comma-separated).
pub const CURATE_PROTECT: &str = "neo.curate.protect";
/// Facts older than this many days whose confidence is below [`CURATE_STALE_CONFIDENCE`] are
/// pruned.
pub const CURATE_STALE_DAYS: &str = "neo.curate.staleDays";
/// The confidence below which an old fact is stale.
pub const CURATE_STALE_CONFIDENCE: &str = "neo.curate.staleConfidence";
/// Retrievals without a success after which a fact is demoted (and again after each as many more).
pub const CURATE_DEMOTE_AFTER: &str = "neo.curate.demoteAfter";
/// The cosine similarity above which facts of one type and area are near-duplicates to merge.
pub const CURATE_SYNTHESIZE: &str = "neo.curate.synthesize";

/// What `git neo curate` does, from the keys above; each defaults on its own.
#[derive(Clone, Debug, PartialEq)]
pub struct CurateSettings {
    /// Caps for `project`, `user`, `org`, `session`.
    pub caps: [(&'static str, usize); 4],
    /// Tags that protect a fact (the built-in ones and the configured ones).
    pub protect: Vec<String>,
    pub stale_days: u64,
    pub stale_confidence: f32,
    pub demote_after: u64,
    pub synthesize: f32,
}

impl CurateSettings {
    /// Tags that always protect a fact.
    pub const PROTECTED: [&'static str; 3] = ["seed", "community", "synthesized"];

    pub fn defaults() -> CurateSettings {
        CurateSettings {
            caps: [("project", 500), ("user", 200), ("org", 100), ("session", 50)],
            protect: Self::PROTECTED.iter().map(|t| t.to_string()).collect(),
            stale_days: 14,
            stale_confidence: 0.4,
            demote_after: 10,
            synthesize: 0.92,
        }
    }

    /// The settings from a config lookup (`key -> raw value`).
    pub fn from_config(get: &dyn Fn(&str) -> Option<String>) -> Result<CurateSettings> {
        let mut s = CurateSettings::defaults();
        for (scope, cap) in &mut s.caps {
            let key = format!("{CURATE_CAP_PREFIX}{scope}");
            if let Some(v) = get(&key) {
                *cap = parse_u64(&key, &v)? as usize;
            }
        }
        if let Some(v) = get(CURATE_PROTECT) {
            for t in v.split(',').map(|t| t.trim().to_lowercase()).filter(|t| !t.is_empty()) {
                if !s.protect.contains(&t) {
                    s.protect.push(t);
                }
            }
        }
        if let Some(v) = get(CURATE_STALE_DAYS) {
            s.stale_days = parse_u64(CURATE_STALE_DAYS, &v)?;
        }
        if let Some(v) = get(CURATE_STALE_CONFIDENCE) {
            s.stale_confidence = parse_threshold(CURATE_STALE_CONFIDENCE, &v)?;
        }
        if let Some(v) = get(CURATE_DEMOTE_AFTER) {
            s.demote_after = parse_u64(CURATE_DEMOTE_AFTER, &v)?.max(1);
        }
        if let Some(v) = get(CURATE_SYNTHESIZE) {
            s.synthesize = parse_threshold(CURATE_SYNTHESIZE, &v)?;
        }
        Ok(s)
    }

    /// The cap of a scope by its kind (`project`, `user`, `org`, `session`).
    pub fn cap(&self, scope_kind: &str) -> usize {
        self.caps.iter().find(|(k, _)| *k == scope_kind).map(|(_, c)| *c).unwrap_or(500)
    }
}

/// `true` or `false` (git's spellings: yes/no, on/off, 1/0 too).
pub fn parse_bool(key: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Ok(true),
        "false" | "no" | "off" | "0" => Ok(false),
        _ => Err(Error::Config { key: key.into(), message: format!("{value:?} is not true or false") }),
    }
}

/// The key of the similarity threshold for superseding facts of `fact_type`.
pub fn supersede_key(fact_type: FactType) -> String {
    format!("neo.supersede.{fact_type}")
}

/// A similarity threshold, 0.0 to 1.0.
pub fn parse_threshold(key: &str, value: &str) -> Result<f32> {
    match value.trim().parse::<f32>() {
        Ok(t) if (0.0..=1.0).contains(&t) => Ok(t),
        _ => Err(Error::Config {
            key: key.into(),
            message: format!("{value:?} is not a similarity threshold; use a number from 0.0 to 1.0, such as 0.85"),
        }),
    }
}

/// A whole number.
pub fn parse_u64(key: &str, value: &str) -> Result<u64> {
    value
        .trim()
        .parse()
        .map_err(|_| Error::Config { key: key.into(), message: format!("{value:?} is not a whole number") })
}

/// A size as git writes one (`core.bigFileThreshold`): a whole number of bytes with an optional
/// `k`, `m` or `g` (binary multiples; `kb`, `mib` and the like are taken too).
pub fn parse_size(key: &str, value: &str) -> Result<u64> {
    let v = value.trim().to_ascii_lowercase();
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (number, unit) = v.split_at(digits);
    let shift = match unit.trim().trim_end_matches("ib").trim_end_matches('b') {
        "" => Some(0),
        "k" => Some(10),
        "m" => Some(20),
        "g" => Some(30),
        _ => None,
    };
    match (number.parse::<u64>(), shift) {
        (Ok(n), Some(shift)) if n.leading_zeros() >= shift => Ok(n << shift),
        _ => Err(Error::Config {
            key: key.into(),
            message: format!("{value:?} is not a size; write bytes, or a number with k, m or g, such as 512m"),
        }),
    }
}

/// The outcome scan's caps, read from [`OUTCOMES_MAX_PER_SCAN`] and its siblings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutcomeCaps {
    pub max_per_scan: usize,
    pub max_per_record_per_day: u32,
    pub survive_commits: u32,
}

impl OutcomeCaps {
    pub const DEFAULT: OutcomeCaps = OutcomeCaps { max_per_scan: 100, max_per_record_per_day: 3, survive_commits: 10 };

    /// The caps from a config lookup (`key -> raw value`), each key defaulting on its own.
    pub fn from_config(get: &dyn Fn(&str) -> Option<String>) -> Result<OutcomeCaps> {
        let num = |key: &str, default: u64| get(key).map(|v| parse_u64(key, &v)).unwrap_or(Ok(default));
        let d = OutcomeCaps::DEFAULT;
        Ok(OutcomeCaps {
            max_per_scan: num(OUTCOMES_MAX_PER_SCAN, d.max_per_scan as u64)? as usize,
            max_per_record_per_day: num(OUTCOMES_MAX_PER_RECORD_PER_DAY, u64::from(d.max_per_record_per_day))? as u32,
            survive_commits: num(OUTCOMES_SURVIVE_COMMITS, u64::from(d.survive_commits))? as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_git_writes_them() {
        assert_eq!(parse_size(SERVER_MEMORY, "512m").ok(), Some(512 << 20));
        assert_eq!(parse_size(SERVER_MEMORY, " 1G ").ok(), Some(1 << 30));
        assert_eq!(parse_size(SERVER_MEMORY, "300 MiB").ok(), Some(300 << 20));
        assert_eq!(parse_size(SERVER_MEMORY, "4096").ok(), Some(4096));
        assert_eq!(parse_size(SERVER_MEMORY, "64kb").ok(), Some(64 << 10));
        for bad in ["", "lots", "1.5g", "-1m", "12t", "99999999999999999999g"] {
            match parse_size(SERVER_MEMORY, bad) {
                Err(Error::Config { key, message }) => {
                    assert_eq!(key, SERVER_MEMORY);
                    assert!(message.contains("512m"), "{message}");
                }
                other => panic!("{bad:?} was taken: {other:?}"),
            }
        }
    }
}
