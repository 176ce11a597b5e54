//! git-neo: a git-native memory for coding agents and the people who work beside them.
//!
//! The library holds every use case ([`api`], with [`api::Session`] the one entry both front ends
//! hold); the binary's CLI and MCP server only parse input, call it, and render. Modules from the
//! bottom up (the layer of each is enforced by `tests/it/boundaries.rs`; see `docs/ARCHITECTURE.md`):
//! - [`record`], [`markdown`], [`rank`], [`frame`], [`layout`], [`setup`]: PURE leaves (record
//!   types and identity; markdown escaping; relevance scoring; names and values of a statement;
//!   the `.git/neo/` layout; agent configuration).
//! - [`config`], [`redact`], [`embed`]: `neo.*` keys; the write-time filter; embedders.
//! - [`store`]: the only module that names gix. [`state`]: PURE, the fold.
//! - [`index`]: derived caches. [`outcomes`]: detection from commit diffs.
//! - [`construct`]: the curated pattern library. [`recall`]: PURE ranking, layers, budget.
//! - [`api`]: use cases, and the session.
//! - [`error`]: typed errors and their categories, shared by all.

pub mod api;
pub mod config;
pub mod construct;
pub mod curate;
pub mod embed;
pub mod error;
pub mod foreign;
pub mod frame;
pub mod index;
pub mod instructions;
pub mod layout;
pub mod markdown;
pub mod outcomes;
pub mod rank;
pub mod recall;
pub mod record;
pub mod redact;
pub mod report;
pub mod scope;
pub mod setup;
pub mod state;
pub mod store;

pub use error::{Error, Result};
