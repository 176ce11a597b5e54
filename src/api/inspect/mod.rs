//! Reading and auditing the memory: integrity (`verify`), what changed between commits
//! (`changes`), the export, the report's data and the usage statistics.

pub mod changes;
pub(crate) mod export;
pub mod report;
pub mod stats;
pub mod verify;
