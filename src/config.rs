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

/// Whether a write supersedes, by the frame rule, a current fact it updates without a key or an
/// id (`true` by default; docs/supersession.md).
pub const UPDATES_FRAME: &str = "neo.updates.frame";

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
