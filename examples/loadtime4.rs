#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]
use ort::session::builder::GraphOptimizationLevel as L;
use std::time::Instant;
fn main() {
    let root = std::path::PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/git-neo");
    let paths = git_neo::embed::ModelPaths::in_cache(&root);
    let env = ort::init_from(&paths.runtime).unwrap().with_name("x").with_telemetry(false).build().unwrap();
    let read = |n: &str| std::fs::read(paths.model_dir.join(n)).unwrap();
    let bytes = read("model.onnx");
    let only: Vec<String> = std::env::args().skip(1).collect();
    for (lvl, name) in [(L::Level2, "/tmp/opt2.onnx"), (L::Level3, "/tmp/opt3.onnx")] {
        if !only.is_empty() {
            break;
        }
        let t = Instant::now();
        let _s = ort::session::Session::builder(&env)
            .unwrap()
            .with_optimization_level(lvl)
            .unwrap()
            .with_intra_threads(2)
            .unwrap()
            .with_optimized_model_path(name)
            .unwrap()
            .commit_from_memory(&bytes)
            .unwrap();
        println!("save {name} {:?} size {}", t.elapsed(), std::fs::metadata(name).unwrap().len());
    }
    let texts: Vec<String> =
        (0..100).map(|i| format!("Service {i} keeps the queue number {i} bounded under load")).collect();
    let mut base: Option<Vec<Vec<f32>>> = None;
    let list: Vec<String> = if only.is_empty() { vec!["orig".into()] } else { only.clone() };
    for src in list.iter().map(String::as_str) {
        let t = Instant::now();
        let onnx = if src == "orig" { read("model.onnx") } else { std::fs::read(src).unwrap() };
        let tf = fastembed::TokenizerFiles {
            tokenizer_file: read("tokenizer.json"),
            config_file: read("config.json"),
            special_tokens_map_file: read("special_tokens_map.json"),
            tokenizer_config_file: read("tokenizer_config.json"),
        };
        let model = fastembed::UserDefinedEmbeddingModel::new(onnx, tf).with_pooling(fastembed::Pooling::Mean);
        let arena = std::env::var("ARENA").map(|v| v == "1").unwrap_or(true);
        let mut o = fastembed::InitOptionsUserDefined::default()
            .with_environment(env.clone())
            .with_max_length(256)
            .with_intra_threads(2)
            .with_session_config("session.intra_op.allow_spinning", "0")
            .with_session_config("session.inter_op.allow_spinning", "0");
        if !arena {
            o = o.with_execution_providers(vec![ort::ep::CPU::default().with_arena_allocator(false).build()]);
        }
        if let Ok(kv) = std::env::var("CFG") {
            for pair in kv.split(',') {
                let (k, v) = pair.split_once('=').unwrap();
                o = o.with_session_config(k, v);
            }
        }
        let mut m = fastembed::TextEmbedding::try_new_from_user_defined(model, o).unwrap();
        let load = t.elapsed();
        let t = Instant::now();
        let v = m.embed(&texts, Some(60)).unwrap();
        let e = t.elapsed();
        let mut q = Vec::new();
        for i in 0..30 {
            let t = Instant::now();
            m.embed(&[format!("how do retries behave {i}")], None).unwrap();
            q.push(t.elapsed());
        }
        q.sort();
        let diff = base.as_ref().map(|b| {
            b.iter().zip(&v).flat_map(|(x, y)| x.iter().zip(y).map(|(a, b)| (a - b).abs())).fold(0f32, f32::max)
        });
        println!("{src}: load {load:?} embed100 {e:?} query p50 {:?} maxdiff {diff:?}", q[15]);
        if base.is_none() {
            base = Some(v);
        }
    }
}
