//! git-neo: a git-native memory for coding agents and the people who work beside them.
//!
//! The library holds every use case ([`api`], with [`api::Session`] the one entry both front ends
//! hold); the binary's CLI and MCP server only parse input, call it, and render. Its API:
//! - [`api`]: the session and what goes in and out of it (requests, outcomes, a write's plan);
//! - [`record`]: record types, canonical bytes and identity; [`scope`]: which memory;
//! - [`recall`]: what recall returns and its rendering; [`embed`]: the embedder choice;
//! - [`construct`]: the curated pattern library; [`instructions`], [`foreign`]: readers of other
//!   tools' files; [`setup`]: agent configuration; [`report`]: the HTML page; [`markdown`];
//! - [`error`]: typed errors and their categories; [`display`]: text from a record or a ref made
//!   safe for a terminal.
//!
//! Beneath them, and not API: the store (the only module that names gix), the fold, the derived
//! indexes, outcome detection, the frame rule, the write-time filter, configuration keys, ranking
//! and curation plans. Their layers are enforced by `tests/it/boundaries.rs`; see
//! `docs/ARCHITECTURE.md`.

// The library's API: what the front ends (and any other program) use. `cargo doc` shows these.
pub mod api;
pub mod ci;
pub mod construct;
pub mod display;
pub mod embed;
pub mod error;
pub mod foreign;
pub mod instructions;
pub mod lesson;
pub mod markdown;
pub mod recall;
pub mod record;
pub mod report;
pub mod scope;
pub mod setup;

// Building blocks beneath the session. Public only so the integration tests and benches can
// drive them on real repositories (a store written by hand, a fold, an index); not API: hidden
// from the documentation, and the front ends may not name them (tests/it/boundaries.rs).
#[doc(hidden)]
pub mod frame;
#[doc(hidden)]
pub mod index;
#[doc(hidden)]
pub mod outcomes;
#[doc(hidden)]
pub mod redact;
#[doc(hidden)]
pub mod state;
#[doc(hidden)]
pub mod store;

// Internal: used by nothing outside the crate.
pub(crate) mod config;
pub(crate) mod curate;
pub(crate) mod layout;
pub(crate) mod rank;

pub use error::{Error, Result};
