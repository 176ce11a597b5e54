//! The one integration test binary: a module per area, all on real temporary git repositories.

// Tests and benches print, read the environment and run processes freely (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

mod attempts;
mod boundaries;
mod cli;
mod code_corpus;
mod concurrency;
mod construct;
mod curation;
mod daemon;
mod edges;
mod faults;
mod fold;
mod forge;
mod format;
mod hostile;
mod instructions;
mod lessons;
mod live;
mod mcp;
mod modes;
mod outcomes;
mod plan;
mod props;
mod quality;
mod readers;
mod recall;
mod review;
mod scopes;
mod setup;
mod snapshots;
mod sources;
mod store;
mod supersede;
mod support;
mod sync;
mod tour;
mod updates;
mod verify;
