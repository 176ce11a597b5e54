#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]
use std::time::Instant;
fn main() {
    let root = std::path::PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/git-neo");
    let paths = git_neo::embed::ModelPaths::in_cache(&root);
    let env = ort::init_from(&paths.runtime).unwrap().with_name("x").with_telemetry(false).build().unwrap();
    let read = |n: &str| std::fs::read(paths.model_dir.join(n)).unwrap();
    let cfg: Vec<(String, String)> = std::env::args()
        .skip(1)
        .map(|a| {
            let (k, v) = a.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    let t = Instant::now();
    let tf = fastembed::TokenizerFiles {
        tokenizer_file: read("tokenizer.json"),
        config_file: read("config.json"),
        special_tokens_map_file: read("special_tokens_map.json"),
        tokenizer_config_file: read("tokenizer_config.json"),
    };
    let model =
        fastembed::UserDefinedEmbeddingModel::new(read("model.onnx"), tf).with_pooling(fastembed::Pooling::Mean);
    let mut o = fastembed::InitOptionsUserDefined::default()
        .with_environment(env)
        .with_max_length(256)
        .with_intra_threads(2)
        .with_session_config("session.intra_op.allow_spinning", "0")
        .with_session_config("session.inter_op.allow_spinning", "0");
    for (k, v) in &cfg {
        o = o.with_session_config(k, v);
    }
    let mut m = fastembed::TextEmbedding::try_new_from_user_defined(model, o).unwrap();
    println!("load {:?}", t.elapsed());
    let texts: Vec<String> =
        (0..100).map(|i| format!("Service {i} keeps the queue number {i} bounded under load")).collect();
    m.embed(&["warm".to_string()], None).unwrap();
    let t = Instant::now();
    let a = m.embed(&texts, Some(60)).unwrap();
    println!("embed 100 {:?}", t.elapsed());
    let mut v = Vec::new();
    for i in 0..50 {
        let t = Instant::now();
        m.embed(&[format!("how do retries behave under load {i}")], None).unwrap();
        v.push(t.elapsed());
    }
    v.sort();
    println!("one query p50 {:?}", v[25]);
    let mut v = Vec::new();
    for i in 0..50 {
        let t = Instant::now();
        m.embed(&[format!("Retries use exponential backoff with jitter capped at thirty seconds in service {i}; the ledger service keeps a bounded queue")], None).unwrap();
        v.push(t.elapsed());
    }
    v.sort();
    println!("one fact p50 {:?}", v[25]);
    println!("v0 {:?}", &a[0][..4]);
}
