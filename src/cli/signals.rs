//! Termination signals. SIGINT and SIGTERM end the program at once, removing the temporary and
//! lock files it holds, except while a ref update is in progress: then the signal is remembered,
//! the update completes (so no stale `neo-memory.lock` is left behind), and the program exits at
//! its next check (`pending`) with 128 + the signal number.

use std::sync::atomic::{AtomicI32, Ordering};

static PENDING: AtomicI32 = AtomicI32::new(0);

fn on_signal(sig: i32) {
    if git_neo::api::ref_updates_in_flight() > 0 {
        PENDING.store(sig, Ordering::SeqCst);
        return;
    }
    git_neo::api::cleanup_tempfiles_signal_safe();
    let _ = signal_hook::low_level::emulate_default_handler(sig);
}

/// Install the handlers; failure to install leaves the default behaviour (immediate termination).
pub fn install() {
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // SAFETY: the handler only touches atomics, gix's signal-safe cleanup (lock-free, no
        // allocation) and signal-hook's signal-safe default-handler emulation.
        let _ = unsafe { signal_hook::low_level::register(sig, move || on_signal(sig)) };
    }
}

/// The exit code to stop with if a termination signal arrived during a ref update.
pub fn pending() -> Option<i32> {
    match PENDING.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(128 + sig),
    }
}
