//! What happened teaches the memory: attempts and their checks, outcomes read from later
//! commits, implicit feedback from the recalls that were asked, local telemetry, and curation.

// An attempt's check runs as a process: an edge this module owns (clippy.toml).
#[allow(clippy::disallowed_methods)]
pub mod attempts;
pub mod curate;
pub mod feedback;
pub mod lessons;
pub(crate) mod outcomes;
pub mod telemetry;
