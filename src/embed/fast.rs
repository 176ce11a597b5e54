//! The real embedder: fastembed's user-defined model API on ONNX Runtime loaded at run time,
//! driven so that real text (long documents beside one-line facts) embeds in bounded memory.
//!
//! Why the pipeline looks like this (measured in `cargo bench --bench embed`, on READMEs of
//! public crates): fastembed pads every batch to its longest member and its default window is
//! 512 tokens, so an unsorted batch of 64 with one long text allocates attention tensors for
//! 64 × 512 × 512 per head, and ONNX Runtime's arena keeps what it grew. Here texts are tokenised
//! first, cut at [`MAX_TOKENS`] (all-MiniLM-L6-v2 was trained on at most 256; what lies past that
//! only dilutes the vector), sorted by length, and cut into batches by a token budget
//! ([`TOKEN_BUDGET`]) rather than a count, so padding is small and the largest tensor is bounded
//! whatever the input. Results come back in the caller's order.
//!
//! That is the pipeline of the f32 products. By default the model's weight products run on int8
//! ([`super::int8`], [`RunOptions::int8`]) and each text goes in a call of its own, cut at the
//! same window: the activations' scale is one per call, so a batch would make a text's vector
//! depend on its neighbours. Measured, it costs nothing: short texts embed faster one by one on
//! int8 than sorted and batched on f32 (243 against 215 a second), long ones too (40.6 against
//! 28.6), and the largest tensor is one text's.

use super::{normalize, EmbedError, Embedder, ModelPaths, MODEL_DIM, MODEL_ID, MODEL_ID_F32};
use std::sync::OnceLock;

/// ONNX Runtime allows one environment per process; it is created once and kept.
static RUNTIME: OnceLock<Result<ort::environment::Environment, String>> = OnceLock::new();

/// The model's window: longer texts are cut to their first 256 tokens.
pub const MAX_TOKENS: usize = 256;

/// Padded tokens (batch size × longest member) per model call. Small on purpose: the bench found
/// no throughput gain above 512 (the model's arithmetic is the limit once padding is gone) and
/// peak RSS growing with the budget (ONNX Runtime plans every intermediate tensor of a call at
/// once): long texts at 1,024: 19.8 texts/s, 330 MB; at 8,192: 15.6 texts/s, 1.4 GB.
pub const TOKEN_BUDGET: usize = 1_024;

/// Texts per model call at most, however short.
pub const MAX_BATCH: usize = 256;

/// How the model is run. The defaults are what the bench chose; the bench varies them.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Intra-op threads (default: the machine's cores).
    pub threads: Option<usize>,
    /// Whether ONNX Runtime's idle threads spin-wait for the next operator's work ([`Spin`]).
    pub spin: Spin,
    /// Padded tokens per model call.
    pub token_budget: usize,
    /// The window texts are cut at (the bench sets fastembed's old default, 512, to compare).
    pub window: usize,
    /// ONNX Runtime's memory arena for the CPU (on by default). The arena keeps the largest
    /// batch's buffers for the life of the process: right for one command (the embed bench's
    /// `arena` row: on long texts 13% faster and 100 MB less peak memory than without), wrong for
    /// the background server, where one model serves many repositories one catch-up after another
    /// (without it, 20 repositories of 1,000 facts left the server at 265 MB resident instead of
    /// 333 MB).
    pub arena: bool,
    /// Run the weight products on int8 ([`super::int8`]; on by default). Each text is then
    /// embedded in a call of its own: the activations' eight-bit scale is one per call, so a text
    /// sharing a call with others (and their padding) would get a vector that depends on them. The
    /// f32 products (the embed bench's `f32` rows) batch as before and stamp caches with another
    /// model id ([`MODEL_ID_F32`]): their vectors are not the int8 ones.
    pub int8: bool,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            threads: None,
            spin: Spin::Never,
            token_budget: TOKEN_BUDGET,
            window: MAX_TOKENS,
            arena: true,
            int8: true,
        }
    }
}

/// How ONNX Runtime's intra-op threads wait between the operators of one model call.
///
/// Measured in `cargo bench --bench embed -- --queries [--busy N]` (one short query per call, a
/// pause between calls as a client leaves one, two cores): a sleeping thread is woken for every
/// operator a call splits, 6.1 to 6.4 ms a query on a quiet machine; spinning within a call and
/// stopping when it returns, 4.7 to 4.9 ms, with no more CPU per query (10.1 to 10.7 ms against
/// 10.5 to 10.9: the wake-ups cost what the spinning does). With two other busy threads beside
/// it was faster too (11.1 against 13.0 to 14.8 ms), with one it was slower (8.3 to 9.7 against
/// 6.7 to 7.6 ms: one of the call's two threads waits, spinning, for the other to be scheduled).
/// Spinning on after the call, ONNX Runtime's default, costs 2 to 3 ms of CPU per query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spin {
    /// Sleep until woken: what a one-shot command uses (its one query is a few ms of the
    /// hundreds the model's load costs it) and what bulk embedding needs no more than.
    Never,
    /// Spin between the operators of a call, stop as the call returns: the background server and
    /// `git neo mcp`, where one short query per call is the work a user waits for.
    WithinCall,
    /// ONNX Runtime's default: spin on after a call too (the embed bench's `before`).
    Always,
}

/// ONNX Runtime's session settings for `spin`.
fn spin_config(spin: Spin) -> [(&'static str, &'static str); 3] {
    let (allow, stop) = match spin {
        Spin::Never => ("0", "0"),
        Spin::WithinCall => ("1", "1"),
        Spin::Always => ("1", "0"),
    };
    [
        ("session.intra_op.allow_spinning", allow),
        ("session.inter_op.allow_spinning", allow),
        // The pool's threads stop spinning as soon as the last call returns.
        ("session.force_spinning_stop", stop),
    ]
}

/// all-MiniLM-L6-v2 (int8), mean pooling, 384 dimensions.
pub struct FastEmbedder {
    model: fastembed::TextEmbedding,
    token_budget: usize,
    /// [`RunOptions::int8`]: one text per call, and the int8 model id.
    int8: bool,
}

impl FastEmbedder {
    /// Load the runtime and the model from `paths` with the default [`RunOptions`]. Errors
    /// (never panics) when files are missing or the runtime cannot be loaded.
    pub fn load(paths: &ModelPaths) -> Result<FastEmbedder, EmbedError> {
        FastEmbedder::load_with(paths, &RunOptions::default())
    }

    /// [`FastEmbedder::load`] with explicit run options.
    pub fn load_with(paths: &ModelPaths, run: &RunOptions) -> Result<FastEmbedder, EmbedError> {
        let missing = paths.missing();
        if !missing.is_empty() {
            return Err(EmbedError::NotInstalled { missing });
        }
        let runtime = RUNTIME.get_or_init(|| {
            let builder = ort::init_from(&paths.runtime).map_err(|e| e.to_string())?;
            builder.with_name("git-neo").with_telemetry(false).build().map_err(|e| e.to_string())
        });
        let environment = match runtime {
            Ok(env) => env.clone(),
            Err(message) => {
                return Err(EmbedError::Runtime { path: paths.runtime.display().to_string(), message: message.clone() })
            }
        };
        let read = |name: &str| {
            std::fs::read(paths.model_dir.join(name)).map_err(|e| EmbedError::Model(format!("cannot read {name}: {e}")))
        };
        let tokenizer_files = fastembed::TokenizerFiles {
            tokenizer_file: read("tokenizer.json")?,
            config_file: read("config.json")?,
            special_tokens_map_file: read("special_tokens_map.json")?,
            tokenizer_config_file: read("tokenizer_config.json")?,
        };
        let mut onnx = read("model.onnx")?;
        if run.int8 {
            let rewritten = super::int8::quantize_products(&onnx).map_err(EmbedError::Model)?;
            if rewritten.products == 0 {
                return Err(EmbedError::Model(
                    "model.onnx has no int8 weight products: it is not the pinned model \
                     (scripts/install-model.sh installs it)"
                        .to_string(),
                ));
            }
            onnx = rewritten.model;
        }
        let model =
            fastembed::UserDefinedEmbeddingModel::new(onnx, tokenizer_files).with_pooling(fastembed::Pooling::Mean);
        let threads = run.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let mut options = fastembed::InitOptionsUserDefined::default()
            .with_environment(environment)
            .with_max_length(run.window)
            .with_intra_threads(threads);
        for (key, value) in spin_config(run.spin) {
            options = options.with_session_config(key, value);
        }
        let options =
            options.with_execution_providers(vec![ort::ep::CPU::default().with_arena_allocator(run.arena).build()]);
        let model = fastembed::TextEmbedding::try_new_from_user_defined(model, options)
            .map_err(|e| EmbedError::Model(e.to_string()))?;
        Ok(FastEmbedder { model, token_budget: run.token_budget.max(run.window), int8: run.int8 })
    }

    /// The underlying fastembed model, for measuring git-neo's overhead against it.
    pub fn raw(&mut self) -> &mut fastembed::TextEmbedding {
        &mut self.model
    }
}

/// Batches of indices into the texts, shortest first: each batch's size times its longest
/// member's length stays within `budget` (a text longer than the budget goes alone), and no
/// batch holds more than [`MAX_BATCH`].
pub fn plan_batches(lengths: &[usize], budget: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| lengths[i]);
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    for i in order {
        // Sorted ascending, so this text is the longest of the batch it joins.
        let padded = (current.len() + 1) * lengths[i].max(1);
        if !current.is_empty() && (padded > budget || current.len() == MAX_BATCH) {
            batches.push(std::mem::take(&mut current));
        }
        current.push(i);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

impl Embedder for FastEmbedder {
    fn model_id(&self) -> &str {
        if self.int8 {
            MODEL_ID
        } else {
            MODEL_ID_F32
        }
    }

    fn dim(&self) -> usize {
        MODEL_DIM
    }

    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let model_err = |e: String| EmbedError::Model(e);
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        // Each text alone on int8 (see `RunOptions::int8`), and one text is its own batch;
        // otherwise batches by token count (cut at the window), read in one extra pass.
        let batches: Vec<Vec<usize>> = if self.int8 || texts.len() == 1 {
            (0..texts.len()).map(|i| vec![i]).collect()
        } else {
            let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let encodings = self.model.tokenizer.encode_batch(inputs, true).map_err(|e| model_err(e.to_string()))?;
            let lengths: Vec<usize> =
                encodings.iter().map(|e| e.get_attention_mask().iter().filter(|&&m| m == 1).count()).collect();
            plan_batches(&lengths, self.token_budget)
        };
        for batch in batches {
            let inputs: Vec<&str> = batch.iter().map(|&i| texts[i].as_str()).collect();
            let vectors = self.model.embed(&inputs, Some(inputs.len())).map_err(|e| model_err(e.to_string()))?;
            for (i, mut v) in batch.into_iter().zip(vectors) {
                if v.len() != MODEL_DIM {
                    return Err(EmbedError::Model(format!(
                        "the model returned {} dimensions, expected {MODEL_DIM}",
                        v.len()
                    )));
                }
                normalize(&mut v);
                out[i] = v;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spinning_within_a_call_stops_when_the_call_returns() {
        let setting = |spin, key| spin_config(spin).into_iter().find(|(k, _)| *k == key).map(|(_, v)| v);
        for key in ["session.intra_op.allow_spinning", "session.inter_op.allow_spinning"] {
            assert_eq!(setting(Spin::Never, key), Some("0"), "{key}");
            assert_eq!(setting(Spin::WithinCall, key), Some("1"), "{key}");
            assert_eq!(setting(Spin::Always, key), Some("1"), "{key}");
        }
        let stop = "session.force_spinning_stop";
        assert_eq!(setting(Spin::WithinCall, stop), Some("1"));
        assert_eq!(setting(Spin::Always, stop), Some("0"));
        // The long-lived loader (the server's and `git neo mcp`'s) spins within a call only.
        let long = RunOptions { arena: false, spin: Spin::WithinCall, ..RunOptions::default() };
        assert_eq!(super::super::long_lived_options().spin, long.spin);
        assert!(!super::super::long_lived_options().arena);
        assert_eq!(RunOptions::default().spin, Spin::Never, "a one-shot command sleeps between operators");
    }

    #[test]
    fn batches_are_sorted_bounded_by_the_budget_and_cover_every_text() {
        let lengths = [256, 3, 40, 256, 12, 7, 100, 256, 5];
        let batches = plan_batches(&lengths, 512);
        let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..lengths.len()).collect::<Vec<_>>(), "every text once");
        for b in &batches {
            let longest = b.iter().map(|&i| lengths[i]).max().unwrap_or(0);
            assert!(b.len() == 1 || b.len() * longest <= 512, "{b:?} exceeds the budget");
        }
        let flat: Vec<usize> = batches.iter().flatten().map(|&i| lengths[i]).collect();
        assert!(flat.windows(2).all(|w| w[0] <= w[1]), "shortest first: {flat:?}");
        // Short texts share a batch; long ones go two at a time.
        assert_eq!(batches[0].len(), 5, "{batches:?}");
        assert_eq!(batches.len(), 3, "{batches:?}");
        assert!(plan_batches(&[], 512).is_empty());
        assert_eq!(plan_batches(&[1; 600], 1_000_000).iter().map(Vec::len).max(), Some(MAX_BATCH));
    }
}
