//! Use cases: what `git neo` and the MCP server do, with no I/O of their own beyond the store.
//!
//! Every function here takes its inputs as data (including who writes and what time it is, so
//! tests fix the clock and author), validates everything before writing anything, and reports
//! every problem at once. Nothing here prints or reads the environment.

// One folder per concern; each use case has one home, named by its one path
// (`api::learn::telemetry`).
pub mod inspect;
pub mod learn;
pub(crate) mod memory;
pub mod recall;
pub mod session;
pub mod share;
pub mod view;
pub mod write;

// The facade's vocabulary: the `Session` a front end holds, and the requests it hands it and
// the views it gets back, each defined in its concern and named here once for the front ends.
// Code inside `api` names each by its concern's path, so that its dependencies show.
pub use crate::config::DEFAULT_SERVER_MEMORY;
pub use inspect::export::ExportedFact;
pub use inspect::stats::Retrieved;
pub use learn::attempts::{AttemptRequest, CheckSpec, DEFAULT_CHECK_TIMEOUT};
pub use learn::curate::{CurateOptions, CurateReport};
pub use learn::feedback::FeedbackReport;
pub use learn::lessons::{LessonEdit, LessonRequest, LessonStatus, LessonView, WorkTreeEdit};
pub use learn::outcomes::{Explanation, Step};
pub use learn::telemetry::Front;
pub use session::scopes::{Promoted, Promotion};
pub use session::{Clock, LiveKey, LivePin, Notice, RecallQuery, Refreshed, Session, SessionOptions};
pub use share::{MergeKind, SyncOutcome};
pub use view::{ListFilter, LoggedCommit, RecordState, Reindexed, ShownRecord, Status};
pub use write::confirm::{Confirmation, Moved};
pub use write::correct::{History, HistoryEvent, Rechecked, Repair};
pub use write::import::{request_of, ForeignOutcome, ImportOutcome, Skipped};
pub use write::plan::{CommitView, PlanView, RecordView};
pub use write::proposals::ReviewOutcome;
pub use write::purge::PurgeOutcome;
pub use write::supersede::{PlannedSupersession, SimilarityCheck};
pub use write::{AddOutcome, AddRequest, InitOutcome};

pub use crate::store::Identity;
/// When git's housekeeping after a write runs: a long-lived front end leaves it to git's own
/// background process ([`Session::set_maintenance`]).
pub use crate::store::Maintenance;
/// For a front end's signal handler while the process ends: how many memory ref updates are
/// under way, and the removal of their temporary files (async-signal-safe).
pub use crate::store::{cleanup_tempfiles_signal_safe, ref_updates_in_flight};
