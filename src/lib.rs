//! git-neo: a git-native memory for coding agents and the people who work beside them.
//!
//! The library holds every use case ([`api`]); the binary and the MCP server only parse input,
//! call it, and print. Module map (see `docs/ARCHITECTURE.md`):
//! - [`record`]: PURE. Record types, canonical bytes, parsing, validation, identity.
//! - [`store`]: the only module that names gix. The memory ref, its layout, reads and CAS writes.
//! - [`state`]: PURE. The fold from all records to current meaning.
//! - [`redact`]: PURE. The write-time filter for secrets and injection-like text.
//! - [`api`]: use cases (init, add, show, list, log, forget).
//! - [`attempts`]: attempts with observed or reported checks, task history, freshness, recheck.
//! - [`construct`]: the curated pattern library shipped with git-neo: format, lint, search.
//! - [`verify`]: the integrity check run in CI.
//! - [`share`]: sync and propose through git remotes.
//! - [`setup`]: PURE. Agent configuration merged into a user's existing files.
//! - [`review`]: memory changes as a semantic changelog (diff, log --markdown).
//! - [`embed`]: embedders (fastembed + ONNX Runtime, and a deterministic one for tests).
//! - [`index`]: derived caches: lexical (tantivy) and vector (usearch) indexes, stamped and rebuildable.
//! - [`recall`]: fusion, ranking, layers and budget; markdown rendering.
//! - [`error`]: typed errors and their categories.

pub mod api;
pub mod config;
pub mod construct;
pub mod embed;
pub mod error;
pub mod index;
pub mod layout;
pub mod markdown;
pub mod outcomes;
pub mod rank;
pub mod recall;
pub mod record;
pub mod redact;
pub mod setup;
pub mod state;
pub mod store;

pub use error::{Error, Result};
