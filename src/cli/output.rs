//! Output: stdout for results, stderr for diagnostics, JSON when asked, colour only on a terminal.

use git_neo::error::Category;
use git_neo::Error;
use std::io::{IsTerminal, Write};

/// Where a command's results go.
pub struct Out {
    pub json: bool,
    colour: bool,
    broken_pipe: bool,
    /// Set when a command runs inside the background server ([`super::daemon`]): stdout and
    /// stderr are collected and sent back to the client, which prints them.
    captured: Option<Captured>,
    /// Every bar and spinner of this run draws through one set, so an embedding bar that appears
    /// under a command's spinner gets its own line instead of overwriting it.
    bars: indicatif::MultiProgress,
}

/// Output collected for a client.
#[derive(Default)]
pub struct Captured {
    pub stdout: Vec<u8>,
    pub stderr: std::cell::RefCell<Vec<u8>>,
}

impl Out {
    pub fn new(json: bool) -> Out {
        let colour =
            !json && std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        Out { json, colour, broken_pipe: false, captured: None, bars: indicatif::MultiProgress::new() }
    }

    /// Output collected in memory, with colour as the client's terminal wants it.
    pub fn capturing(json: bool, colour: bool) -> Out {
        Out {
            json,
            colour: colour && !json,
            broken_pipe: false,
            captured: Some(Captured::default()),
            bars: indicatif::MultiProgress::new(),
        }
    }

    /// What a capturing `Out` collected.
    pub fn take_captured(&mut self) -> Captured {
        self.captured.take().unwrap_or_default()
    }

    /// Print a line on stdout, terminal controls it does not paint itself made visible
    /// ([`git_neo::display::escape_output`]). A closed pipe stops further output silently.
    pub fn line(&mut self, s: &str) {
        let s = git_neo::display::escape_output(s);
        self.raw_line(&s);
    }

    /// Print a line on stdout as it is (JSON, whose encoder escapes every control character).
    fn raw_line(&mut self, s: &str) {
        if self.broken_pipe {
            return;
        }
        if let Some(c) = &mut self.captured {
            c.stdout.extend_from_slice(s.as_bytes());
            c.stdout.push(b'\n');
            return;
        }
        let mut stdout = std::io::stdout().lock();
        if let Err(e) = writeln!(stdout, "{s}") {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                self.broken_pipe = true;
            }
        }
    }

    /// Print a JSON value on stdout.
    pub fn json<T: serde::Serialize>(&mut self, value: &T) {
        match serde_json::to_string_pretty(value) {
            Ok(s) => self.raw_line(&s),
            Err(e) => self.note(&format!("error: cannot encode JSON output: {e}")),
        }
    }

    /// A note for people on stderr (never in JSON mode's stdout).
    pub fn note(&self, s: &str) {
        let s = git_neo::display::escape_output(s);
        let s = s.as_ref();
        if let Some(c) = &self.captured {
            let mut err = c.stderr.borrow_mut();
            err.extend_from_slice(s.as_bytes());
            err.push(b'\n');
            return;
        }
        // A closed stderr must not turn into a panic: diagnostics are best effort. A bar on
        // screen steps aside while the note is written, and is drawn again under it.
        self.bars.suspend(|| {
            let _ = writeln!(std::io::stderr(), "{s}");
        });
    }

    pub fn warn(&self, s: &str) {
        self.note(&format!("warning: {s}"));
    }

    /// Paint `s` with an ANSI colour code when colour is on.
    pub fn paint(&self, code: &str, s: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    /// Report an error: always as text on stderr; in JSON mode also as a JSON object on stdout.
    pub fn error(&mut self, e: &Error) {
        self.note(&format!("error: {e}"));
        if self.json {
            let category = match e.category() {
                Category::User => "user",
                Category::Integrity => "integrity",
                Category::Conflict => "conflict",
                Category::Environment => "environment",
            };
            let problems = match e {
                Error::Invalid(p) => serde_json::to_value(p).unwrap_or_default(),
                _ => serde_json::Value::Array(Vec::new()),
            };
            let field = match e {
                Error::Invalid(p) => p.0.first().map(|p| p.field.clone()),
                Error::NotFound { field, .. } | Error::Ambiguous { field, .. } => Some(field.clone()),
                Error::Config { key, .. } => Some(key.clone()),
                Error::Environment { variable, .. } => Some(variable.clone()),
                _ => None,
            };
            self.json(&error_json(category, category, &e.to_string(), field, super::exit_code(e), problems));
        }
    }

    /// A progress bar on stderr, drawn only when stderr is a terminal and output is not JSON.
    pub fn progress(&self, len: u64, what: &str) -> indicatif::ProgressBar {
        bar_in(self.bar_set().as_ref(), len, what)
    }

    /// Where this run's bars draw, or `None` when none may be drawn (JSON, captured output, or
    /// stderr not a terminal): for a bar made later, outside a borrow of `self` ([`bar_in`]).
    pub fn bar_set(&self) -> Option<indicatif::MultiProgress> {
        (!self.json && self.captured.is_none() && std::io::stderr().is_terminal()).then(|| self.bars.clone())
    }

    /// Run `work` under a spinner on stderr saying `what` (work of unknown length: a curation,
    /// the report's history walk), drawn like [`Out::progress`] only on a terminal and cleared
    /// when the work ends, however it ends.
    pub fn spinning<T>(&self, what: &str, work: impl FnOnce() -> T) -> T {
        let Some(bars) = self.bar_set() else { return work() };
        // Drawn only when the work is still running after `BAR_DELAY`, as a bar is.
        let bar = indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::hidden());
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg}") {
            bar.set_style(style);
        }
        bar.set_message(what.to_string());
        let later = bar.downgrade();
        std::thread::spawn(move || {
            std::thread::sleep(BAR_DELAY);
            if let Some(bar) = later.upgrade().filter(|b| !b.is_finished()) {
                let bar = bars.add(bar);
                bar.enable_steady_tick(std::time::Duration::from_millis(120));
            }
        });
        let out = work();
        bar.finish_and_clear();
        out
    }

    /// The exit code for a successful run (0, including after a closed pipe).
    pub fn finish(&self) -> i32 {
        super::EXIT_OK
    }
}

/// A progress bar of `len` steps in `bars` (hidden without them).
///
/// The bar is made hidden, styled, and shown only if the work is still running after
/// [`BAR_DELAY`]: work a person does not wait for draws nothing (no "embedding 0/1" flashing
/// during an ordinary recall), and the first frame is drawn once, already styled.
pub fn bar_in(bars: Option<&indicatif::MultiProgress>, len: u64, what: &str) -> indicatif::ProgressBar {
    let Some(bars) = bars else { return indicatif::ProgressBar::hidden() };
    let bar = indicatif::ProgressBar::with_draw_target(Some(len), indicatif::ProgressDrawTarget::hidden());
    if let Ok(style) = indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {eta}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_string());
    // A weak handle: once the work is over and its owner dropped the bar, there is nothing to show.
    let (later, bars) = (bar.downgrade(), bars.clone());
    std::thread::spawn(move || {
        std::thread::sleep(BAR_DELAY);
        if let Some(bar) = later.upgrade().filter(|b| !b.is_finished()) {
            bars.add(bar);
        }
    });
    bar
}

/// How long work runs before its progress bar is drawn.
pub const BAR_DELAY: std::time::Duration = std::time::Duration::from_secs(1);

/// The JSON every failure prints under `--json` (docs/cli.md): `category` (`user`, `integrity`,
/// `conflict`, `environment`, or `usage` for a command line clap refused), `kind` (the category,
/// or what was wrong with the command line: `unknown_argument`, `invalid_value` …), the message,
/// the `field` when one is known, the `exit` code, and every problem found.
pub fn error_json(
    category: &str,
    kind: &str,
    message: &str,
    field: Option<String>,
    exit: i32,
    problems: serde_json::Value,
) -> serde_json::Value {
    let mut error = serde_json::json!({
        "category": category, "kind": kind, "message": message, "exit": exit, "problems": problems
    });
    if let Some(f) = field {
        error["field"] = serde_json::Value::String(f);
    }
    serde_json::json!({ "error": error })
}
