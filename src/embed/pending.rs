//! A model that loads on a thread of its own while its caller gets on with what needs no model.
//!
//! Loading the model is most of a cold command's cost (ONNX Runtime reads the graph and turns its
//! int8 weights into float32: about a quarter of a second). The first recall in a repository
//! also reads the memory, builds or opens the indexes and reads the user's vector cache, none of
//! which needs the model until a text is not in that cache. So the model is loaded beside that
//! work, on the other core, and the first call that needs it waits for what is left of the load.
//!
//! A [`Pending`] knows its model id and dimension before the model is there (they are the
//! installed model's constants), so caches and stamps are decided without waiting. A load that
//! fails is an [`EmbedError`] on every call that needs the model, and from
//! [`Embedder::ready`], which callers ask before they tell semantic recall from lexical: the
//! same error, and the same answer, as when the load ran in the caller's thread.

use super::{EmbedError, Embedder};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// What the loading thread returns.
type Loaded = Result<Box<dyn Embedder>, EmbedError>;

enum State {
    Loading(JoinHandle<Loaded>),
    Ready(Box<dyn Embedder>),
    Failed(EmbedError),
}

/// An embedder whose model is still loading (see the module docs).
pub struct Pending {
    model_id: String,
    dim: usize,
    state: State,
    settled: Arc<AtomicBool>,
}

/// Tells, without waiting, whether a [`Pending`] load has finished (loaded or failed).
#[derive(Clone)]
pub struct Settled(Arc<AtomicBool>);

impl Settled {
    /// A load that finished before this handle was made (a model loaded in place).
    pub fn already() -> Settled {
        Settled(Arc::new(AtomicBool::new(true)))
    }

    pub fn get(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

impl Pending {
    /// Start `load` on a thread of its own; `model_id` and `dim` are what it will load.
    pub fn start(
        model_id: &str,
        dim: usize,
        load: impl FnOnce() -> Loaded + Send + 'static,
    ) -> Result<(Pending, Settled), EmbedError> {
        let settled = Arc::new(AtomicBool::new(false));
        let done = settled.clone();
        let handle = std::thread::Builder::new()
            .name("neo-model-load".into())
            .spawn(move || {
                let loaded = load();
                done.store(true, Ordering::Release);
                loaded
            })
            .map_err(|e| EmbedError::Model(format!("cannot start a thread to load the model: {e}")))?;
        let pending =
            Pending { model_id: model_id.to_string(), dim, state: State::Loading(handle), settled: settled.clone() };
        Ok((pending, Settled(settled)))
    }

    /// Wait for the load; the model, or why there is none.
    fn model(&mut self) -> Result<&mut Box<dyn Embedder>, EmbedError> {
        if matches!(self.state, State::Loading(_)) {
            if let State::Loading(handle) = std::mem::replace(&mut self.state, State::Failed(lost())) {
                self.state = match handle.join() {
                    Ok(Ok(model)) => State::Ready(model),
                    Ok(Err(e)) => State::Failed(e),
                    // The loader panicked (inside ONNX Runtime's bindings): no model, as for a
                    // failed load.
                    Err(_) => State::Failed(lost()),
                };
            }
            self.settled.store(true, Ordering::Release);
        }
        match &mut self.state {
            State::Ready(model) => Ok(model),
            State::Failed(e) => Err(e.clone()),
            State::Loading(_) => Err(lost()),
        }
    }
}

/// A command that never needed the model still waits for its load before it goes: the process
/// would otherwise exit (running ONNX Runtime's static destructors) while the loading thread is
/// inside ONNX Runtime.
impl Drop for Pending {
    fn drop(&mut self) {
        if let State::Loading(handle) = std::mem::replace(&mut self.state, State::Failed(lost())) {
            let _ = handle.join();
        }
    }
}

fn lost() -> EmbedError {
    EmbedError::Model("the model's loading thread stopped before the model was loaded".into())
}

impl Embedder for Pending {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.model()?.embed(texts)
    }

    fn ready(&mut self) -> Result<(), EmbedError> {
        self.model().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::HashEmbedder;
    use std::sync::mpsc;

    fn texts() -> Vec<String> {
        vec!["retries back off exponentially".into(), "the ledger is append-only".into()]
    }

    /// The caller goes on while the model loads; the first call that needs the model waits for
    /// it and answers what the model answers, bit for bit.
    #[test]
    fn the_caller_goes_on_while_the_model_loads_and_the_first_call_waits_for_it() {
        let (go, wait) = mpsc::channel::<()>();
        let (mut pending, settled) = Pending::start("hash", 16, move || {
            wait.recv().expect("told to go");
            Ok(Box::new(HashEmbedder::new(16)) as Box<dyn Embedder>)
        })
        .expect("start");
        // Known before the model is there.
        assert_eq!((pending.model_id(), pending.dim()), ("hash", 16));
        assert!(!settled.get(), "still loading: the loader has not been told to go");
        go.send(()).expect("go");
        let got = pending.embed(&texts()).expect("embed");
        assert!(settled.get());
        assert_eq!(got, HashEmbedder::new(16).embed(&texts()).expect("embed"));
        pending.ready().expect("loaded");
    }

    /// A load that fails is the same error on every call that needs the model, and from `ready`.
    #[test]
    fn a_failed_load_is_an_error_on_every_call() {
        let (mut pending, settled) =
            Pending::start("hash", 16, || Err(EmbedError::Model("the graph is damaged".into()))).expect("start");
        let first = pending.ready().expect_err("no model").to_string();
        assert!(first.contains("the graph is damaged"), "{first}");
        assert!(settled.get());
        assert_eq!(pending.embed(&texts()).expect_err("no model").to_string(), first);
        assert_eq!(pending.ready().expect_err("no model").to_string(), first);
    }

    /// A loader that panics leaves no model and an error, never a panic in the caller.
    #[test]
    fn a_loader_that_panics_is_an_error() {
        let (mut pending, _) = Pending::start("hash", 16, || panic!("inside the runtime")).expect("start");
        let e = pending.embed(&texts()).expect_err("no model").to_string();
        assert!(e.contains("stopped before the model was loaded"), "{e}");
    }
}
