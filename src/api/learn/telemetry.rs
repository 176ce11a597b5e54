//! Local retrieval telemetry: what each recall looked at and returned, kept in this clone only.
//!
//! One JSON line per recall in `.git/neo/telemetry/recalls.jsonl` (`crate::layout`): when,
//! which front end asked (CLI, prompt hook, MCP), a hash of the query (and its text unless
//! `neo.telemetry.queries=false`), hashes of its words and a coarse copy of its embedding (so
//! implicit feedback can tell a repeated question from a new one without the text), candidate
//! counts per index, the returned ids with rank, layer and scope, estimated tokens and latency.
//!
//! It is bounded: when the file passes [`MAX_FILE_BYTES`] it becomes `recalls.1.jsonl` (replacing
//! the one before), so at most two files are kept. `neo.telemetry=off` turns it off entirely:
//! nothing is written, and nothing is read either. None of it is ever committed or sent anywhere;
//! what it teaches the memory goes through ordinary outcome records (`feedback.rs`), which carry
//! hashes, never query text.

use crate::error::{Error, Result};
use crate::layout::CacheDir;
use crate::record::Timestamp;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// The size at which the current file is rotated: two files of this size at most (about 3,000
/// recalls each with a model, more without).
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Which front end asked for a recall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Front {
    /// `git neo recall`.
    Cli,
    /// The prompt hook an agent's harness runs before each prompt.
    Hook,
    /// The MCP server's `recall` tool.
    Mcp,
}

impl Front {
    pub fn as_str(self) -> &'static str {
        match self {
            Front::Cli => "cli",
            Front::Hook => "hook",
            Front::Mcp => "mcp",
        }
    }
}

/// Whether telemetry is kept, and with query text or not (from `neo.telemetry` and
/// `neo.telemetry.queries`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    pub on: bool,
    pub queries: bool,
}

impl Settings {
    /// The settings from a config lookup (`key -> raw value`); both default to on.
    pub fn from_config(get: &dyn Fn(&str) -> Option<String>) -> Result<Settings> {
        let flag = |key: &str| get(key).map(|v| crate::config::parse_bool(key, &v)).unwrap_or(Ok(true));
        Ok(Settings { on: flag(crate::config::TELEMETRY)?, queries: flag(crate::config::TELEMETRY_QUERIES)? })
    }
}

/// Candidates each index offered before ranking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidates {
    pub lexical: usize,
    pub vector: usize,
}

/// One returned item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Returned {
    /// The record id, full hex (a document section: its source record; a pattern: its name).
    pub id: String,
    /// 1-based, in the order shown.
    pub rank: u32,
    /// The layer's name ([`crate::recall::LayerKind::name`]): `constraints`, `facts`, `attempts`,
    /// `invalidated`, `known_unknowns`, `documents` or `construct`.
    pub layer: String,
    pub scope: String,
}

impl Returned {
    /// Whether the item was chosen for its relevance to the query (constraints are shown always,
    /// superseded facts as history): what counts as "retrieved" in stats and curation.
    pub fn relevant(&self) -> bool {
        crate::recall::LayerKind::from_name(&self.layer).is_some_and(crate::recall::LayerKind::relevant)
    }
}

/// One recall, as kept on disk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// 16 hex digits naming this event (hash of time, front end and query hash).
    pub id: String,
    /// Seconds since the epoch, by the session's clock.
    pub at: i64,
    pub front: Front,
    /// The first 16 hex digits of the BLAKE3 hash of the query text.
    pub query_hash: String,
    /// The query text (absent with `neo.telemetry.queries=false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// 32-bit hashes of the query's words (lowercased, 3 letters or more), sorted and distinct.
    #[serde(default)]
    pub words: Vec<u32>,
    /// The query's embedding quantised to signed bytes, hex (absent without a model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<String>,
    /// The model the vector came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub candidates: Candidates,
    pub results: Vec<Returned>,
    pub tokens: usize,
    pub latency_ms: f64,
    pub scopes: Vec<String>,
}

/// The first 16 hex digits of BLAKE3.
pub fn short_hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex()[..16].to_string()
}

/// The sorted, distinct 32-bit hashes of `text`'s words of 3 letters or more, lowercased, stop
/// words left out (two questions that share only "how does the" are not related).
pub fn word_hashes(text: &str) -> Vec<u32> {
    let mut out: Vec<u32> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !crate::index::lexical::is_stop(w))
        .map(|w| {
            let h = blake3::hash(w.as_bytes());
            let b = h.as_bytes();
            u32::from_le_bytes([b[0], b[1], b[2], b[3]])
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// A unit vector as signed bytes (each component × 127), hex: coarse, but cosine on it differs
/// from the exact one by well under 0.01 for 384-dimension sentence vectors.
pub fn quantise(v: &[f32]) -> String {
    let mut s = String::with_capacity(v.len() * 2);
    for x in v {
        let q = (x.clamp(-1.0, 1.0) * 127.0).round() as i8;
        s.push_str(&format!("{:02x}", q as u8));
    }
    s
}

/// The vector [`quantise`] wrote (`None` when the text is not one).
pub fn dequantise(hex: &str) -> Option<Vec<f32>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok().map(|b| f32::from(b as i8) / 127.0))
        .collect()
}

impl Event {
    /// Whether the recall returned a relevant record: what hit rates count.
    pub fn hit(&self) -> bool {
        self.results.iter().any(Returned::relevant)
    }

    /// A new event; `id` is derived from the rest.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        at: Timestamp,
        front: Front,
        query: &str,
        keep_query: bool,
        vector: Option<(&str, &[f32])>,
        candidates: Candidates,
        results: Vec<Returned>,
        tokens: usize,
        latency_ms: f64,
        scopes: Vec<String>,
    ) -> Event {
        let query_hash = short_hash(query);
        let id = short_hash(&format!("{}:{}:{}:{}", at.0, front.as_str(), query_hash, latency_ms));
        Event {
            id,
            at: at.0,
            front,
            query_hash,
            query: keep_query.then(|| query.to_string()),
            words: word_hashes(query),
            vector: vector.map(|(_, v)| quantise(v)),
            model: vector.map(|(m, _)| m.to_string()),
            candidates,
            results,
            tokens,
            latency_ms,
            scopes,
        }
    }
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::Io { context: format!("writing {}", path.display()), source: e }
}

/// Append `event` to the log under `caches`, rotating a full file first. Appends of one line
/// are atomic enough for concurrent recalls: each is a single `write` to a file opened in append
/// mode.
pub fn append(caches: &CacheDir, event: &Event) -> Result<()> {
    let path = caches.telemetry();
    let dir = path.parent().expect("the telemetry file has a directory");
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    if std::fs::metadata(&path).is_ok_and(|m| m.len() >= MAX_FILE_BYTES) {
        // Another recall may have rotated it since: then there is nothing to move.
        match std::fs::rename(&path, caches.telemetry_rotated()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_err(&path)(e)),
            _ => {}
        }
    }
    let mut line = serde_json::to_vec(event).map_err(|e| Error::invalid("telemetry", e.to_string()))?;
    line.push(b'\n');
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(io_err(&path))?;
    f.write_all(&line).map_err(io_err(&path))
}

/// Every event kept, oldest first. Lines that do not parse (a torn write, an older format) are
/// skipped: telemetry is bookkeeping, never a reason to fail.
pub fn read(caches: &CacheDir) -> Vec<Event> {
    let mut out = Vec::new();
    for path in [caches.telemetry_rotated(), caches.telemetry()] {
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        out.extend(text.lines().filter_map(|l| serde_json::from_str::<Event>(l).ok()));
    }
    out.sort_by_key(|e| e.at);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(at: i64, query: &str) -> Event {
        Event::new(
            Timestamp(at),
            Front::Cli,
            query,
            true,
            Some(("m", &[0.6, -0.8, 0.0])),
            Candidates { lexical: 3, vector: 2 },
            vec![Returned { id: "ab".into(), rank: 1, layer: "facts".into(), scope: "project".into() }],
            120,
            4.5,
            vec!["project".into()],
        )
    }

    #[test]
    fn quantised_vectors_round_trip_closely() {
        let v = [0.6f32, -0.8, 0.0];
        let back = dequantise(&quantise(&v)).expect("hex");
        assert!(v.iter().zip(&back).all(|(a, b)| (a - b).abs() < 0.005), "{back:?}");
        assert_eq!(dequantise("zz"), None);
    }

    #[test]
    fn words_are_hashed_case_blind_and_short_words_dropped() {
        assert_eq!(word_hashes("Retry the DEPLOY"), word_hashes("deploy retry the a"));
        assert_eq!(word_hashes("a an to").len(), 0);
    }

    #[test]
    fn the_log_rotates_and_keeps_two_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let caches = CacheDir::in_git_dir(dir.path());
        append(&caches, &event(1, "first")).expect("append");
        // A full file is rotated before the next append.
        let pad = vec![b'x'; MAX_FILE_BYTES as usize];
        std::fs::write(caches.telemetry(), [&pad[..], b"\n"].concat()).expect("fill");
        append(&caches, &event(2, "second")).expect("append");
        assert!(caches.telemetry_rotated().exists());
        let events = read(&caches);
        assert_eq!(events.iter().map(|e| e.query.as_deref()).collect::<Vec<_>>(), vec![Some("second")]);
        // Without query text, the hash and words are still kept.
        let mut quiet = event(3, "secret words here");
        quiet.query = None;
        append(&caches, &quiet).expect("append");
        let kept = read(&caches).pop().expect("kept");
        assert_eq!(kept.query, None);
        assert_eq!(kept.query_hash, short_hash("secret words here"));
    }
}
