//! Embeddings: the [`Embedder`] trait, the real backend (fastembed with ONNX Runtime loaded at run
//! time, all-MiniLM-L6-v2 int8, mean pooling), and a deterministic embedder for unit tests.
//!
//! Nothing here downloads anything: the model and runtime are installed by
//! `scripts/install-model.sh` into a cache directory the caller names ([`ModelPaths`]). A missing
//! or broken runtime is an [`EmbedError`], never a panic.

mod cache;
mod fast;
mod hash;
pub mod int8;
mod memo;
mod pending;
mod shared;

pub use cache::TextCache;
pub use fast::{FastEmbedder, RunOptions, Spin, MAX_TOKENS};
pub use hash::HashEmbedder;
pub use memo::Memo;
pub use pending::{Pending, Settled};
pub use shared::Shared;

use std::path::{Path, PathBuf};

// The error type lives with the library's other errors, which depend on nothing above them.
pub use crate::error::EmbedError;

/// Turns texts into unit-length vectors.
pub trait Embedder: Send {
    /// A stable id of the model (part of every cache stamp: a different model means a rebuild).
    fn model_id(&self) -> &str;
    /// The vectors' dimension.
    fn dim(&self) -> usize;
    /// Embed `texts`, one L2-normalised vector each, in order.
    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// Wait until the model can embed; `Err` when it cannot (a load that failed). An embedder
    /// whose model loads in the background ([`Pending`]) answers once the load is over; one that
    /// was loaded in place is ready as soon as it exists.
    fn ready(&mut self) -> Result<(), EmbedError> {
        Ok(())
    }
}

/// For tests: the deterministic embedder, counting the texts it is asked to embed.
#[cfg(test)]
pub(crate) struct Counting(pub HashEmbedder, pub std::sync::Arc<std::sync::atomic::AtomicUsize>);

#[cfg(test)]
impl Embedder for Counting {
    fn model_id(&self) -> &str {
        self.0.model_id()
    }
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.1.fetch_add(texts.len(), std::sync::atomic::Ordering::Relaxed);
        self.0.embed(texts)
    }
}

/// The files of the pinned model and runtime inside a cache directory.
#[derive(Clone, Debug)]
pub struct ModelPaths {
    pub model_dir: PathBuf,
    pub runtime: PathBuf,
}

/// The model id stamped into caches: the pinned model with its weight products on int8
/// ([`int8`]), each text embedded alone.
pub const MODEL_ID: &str = "all-minilm-l6-v2-int8@2";
/// The id of the same model run with f32 products ([`RunOptions::int8`] off; every cache stamped
/// before the int8 products). Its vectors differ from [`MODEL_ID`]'s (cosine 0.99 or more), so
/// caches stamped with it are rebuilt.
pub const MODEL_ID_F32: &str = "all-minilm-l6-v2-int8@1";
/// The model's dimension.
pub const MODEL_DIM: usize = 384;
/// The model files `scripts/install-model.sh` installs.
pub const MODEL_FILES: [&str; 5] =
    ["model.onnx", "tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"];

impl ModelPaths {
    /// Where `scripts/install-model.sh` puts the files under `cache_root` (`~/.cache/git-neo`).
    pub fn in_cache(cache_root: &Path) -> ModelPaths {
        ModelPaths {
            model_dir: cache_root.join("models").join("all-minilm-l6-v2-int8"),
            runtime: cache_root.join("onnxruntime").join("libonnxruntime.so.1.24.4"),
        }
    }

    /// The files that are missing, as paths.
    pub fn missing(&self) -> Vec<String> {
        let mut out: Vec<String> = MODEL_FILES
            .iter()
            .map(|f| self.model_dir.join(f))
            .filter(|p| !p.is_file())
            .map(|p| p.display().to_string())
            .collect();
        if !self.runtime.is_file() {
            out.push(self.runtime.display().to_string());
        }
        out
    }
}

/// L2-normalise in place (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Cosine similarity of two vectors (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let n = a.iter().map(|x| x * x).sum::<f32>().sqrt() * b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        dot / n
    } else {
        0.0
    }
}

/// Which embedder a session uses; the front end decides (from its flags and environment) and
/// passes it as data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmbedderChoice {
    /// The installed model under this cache root (`<root>/models/…`, `<root>/onnxruntime/…`).
    Model { cache_root: PathBuf },
    /// The deterministic test embedder ([`HashEmbedder`], 384 dimensions).
    Hash,
    /// None: lexical recall only.
    Off,
}

/// Why there is no embedder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoEmbedder {
    /// Turned off by the front end ([`EmbedderChoice::Off`]).
    Disabled,
    /// The model or ONNX Runtime is not installed.
    NotInstalled,
    /// It is installed but does not load, or it failed while embedding.
    Failed(String),
}

impl std::fmt::Display for NoEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoEmbedder::Disabled => f.write_str("embeddings are turned off (GIT_NEO_EMBEDDER=none)"),
            NoEmbedder::NotInstalled => {
                f.write_str("no embedding model is installed (scripts/install-model.sh installs one)")
            }
            NoEmbedder::Failed(e) => write!(f, "the embedding model does not load: {e}"),
        }
    }
}

/// The user's vector cache for the installed model under `cache_root` ([`TextCache`]).
pub fn vector_cache(cache_root: &Path) -> PathBuf {
    cache_root.join("vectors").join(format!("{MODEL_ID}.bin"))
}

/// Load the embedder `choice` names, or say why there is none. It remembers its last few
/// vectors ([`Memo`]) and reads and fills the user's vector cache ([`TextCache`]). The model
/// itself loads in the background ([`Pending`]): the caller goes on (reading the memory, opening
/// its indexes, reading the vector cache) and the first call that needs the model waits for what
/// is left of the load. Missing files are known at once ([`NoEmbedder::NotInstalled`]); a model
/// that is there but does not load is an error from [`Embedder::ready`] and from every embedding.
pub fn load(choice: &EmbedderChoice) -> Result<Box<dyn Embedder>, NoEmbedder> {
    load_with(choice, RunOptions::default()).map(|(e, _)| e)
}

/// [`load`] for a process that lives long and embeds for many memories (the background server):
/// without ONNX Runtime's arena, so a large catch-up's buffers are handed back ([`RunOptions::arena`]), its
/// threads spinning within a call ([`Spin::WithinCall`]): one short query per call is what its users wait for.
/// [`Settled`] tells, without waiting, when the load is over.
pub fn load_long_lived(choice: &EmbedderChoice) -> Result<(Box<dyn Embedder>, Settled), NoEmbedder> {
    load_with(choice, long_lived_options())
}

/// How [`load_long_lived`] runs the model.
fn long_lived_options() -> RunOptions {
    RunOptions { arena: false, spin: Spin::WithinCall, ..RunOptions::default() }
}

fn load_with(choice: &EmbedderChoice, run: RunOptions) -> Result<(Box<dyn Embedder>, Settled), NoEmbedder> {
    match choice {
        EmbedderChoice::Hash => Ok((Box::new(Memo::new(Box::new(HashEmbedder::new(MODEL_DIM)))), Settled::already())),
        EmbedderChoice::Off => Err(NoEmbedder::Disabled),
        EmbedderChoice::Model { cache_root } => {
            let paths = ModelPaths::in_cache(cache_root);
            if !paths.missing().is_empty() {
                return Err(NoEmbedder::NotInstalled);
            }
            let (pending, settled) = Pending::start(MODEL_ID, MODEL_DIM, move || {
                FastEmbedder::load_with(&paths, &run).map(|e| Box::new(e) as Box<dyn Embedder>)
            })
            .map_err(|e| NoEmbedder::Failed(e.to_string()))?;
            let cached = TextCache::new(Box::new(pending), vector_cache(cache_root));
            Ok((Box::new(Memo::new(Box::new(cached))), settled))
        }
    }
}
