//! The one integration test binary: a module per area, all on real temporary git repositories.

mod attempts;
mod boundaries;
mod cli;
mod code_corpus;
mod concurrency;
mod construct;
mod daemon;
mod fold;
mod format;
mod instructions;
mod mcp;
mod modes;
mod outcomes;
mod quality;
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
mod verify;
