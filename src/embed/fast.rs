//! The real embedder: fastembed's user-defined model API on ONNX Runtime loaded at run time.

use super::{normalize, EmbedError, Embedder, ModelPaths, MODEL_DIM, MODEL_ID};
use std::sync::OnceLock;

/// ONNX Runtime allows one environment per process; it is created once and kept.
static RUNTIME: OnceLock<Result<ort::environment::Environment, String>> = OnceLock::new();

/// all-MiniLM-L6-v2 (int8), mean pooling, 384 dimensions.
pub struct FastEmbedder {
    model: fastembed::TextEmbedding,
}

impl FastEmbedder {
    /// Load the runtime and the model from `paths`. Errors (never panics) when files are
    /// missing or the runtime cannot be loaded.
    pub fn load(paths: &ModelPaths) -> Result<FastEmbedder, EmbedError> {
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
        let model = fastembed::UserDefinedEmbeddingModel::new(read("model.onnx")?, tokenizer_files)
            .with_pooling(fastembed::Pooling::Mean);
        let model = fastembed::TextEmbedding::try_new_from_user_defined(
            model,
            fastembed::InitOptionsUserDefined::default().with_environment(environment),
        )
        .map_err(|e| EmbedError::Model(e.to_string()))?;
        Ok(FastEmbedder { model })
    }
}

impl FastEmbedder {
    /// The underlying fastembed model, for measuring git-neo's overhead against it.
    pub fn raw(&mut self) -> &mut fastembed::TextEmbedding {
        &mut self.model
    }
}

impl Embedder for FastEmbedder {
    fn model_id(&self) -> &str {
        MODEL_ID
    }

    fn dim(&self) -> usize {
        MODEL_DIM
    }

    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = self.model.embed(texts, Some(64)).map_err(|e| EmbedError::Model(e.to_string()))?;
        for v in &mut out {
            if v.len() != MODEL_DIM {
                return Err(EmbedError::Model(format!(
                    "the model returned {} dimensions, expected {MODEL_DIM}",
                    v.len()
                )));
            }
            normalize(v);
        }
        Ok(out)
    }
}
