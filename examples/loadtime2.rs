#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]
use std::time::Instant;
fn main() {
    let root = std::path::PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/git-neo");
    let paths = git_neo::embed::ModelPaths::in_cache(&root);
    let t = Instant::now();
    let env = ort::init_from(&paths.runtime).unwrap().with_name("x").with_telemetry(false).build().unwrap();
    println!("init {:?}", t.elapsed());
    let t = Instant::now();
    let bytes = std::fs::read(paths.model_dir.join("model.onnx")).unwrap();
    println!("read {:?} {} bytes", t.elapsed(), bytes.len());
    let t = Instant::now();
    let tok = std::fs::read(paths.model_dir.join("tokenizer.json")).unwrap();
    let _ = tok.len();
    println!("tokenizer {:?}", t.elapsed());
    for (lvl, name) in [
        (ort::session::builder::GraphOptimizationLevel::Level3, "L3"),
        (ort::session::builder::GraphOptimizationLevel::Level1, "L1"),
        (ort::session::builder::GraphOptimizationLevel::Disable, "off"),
    ] {
        for prepack in ["0", "1"] {
            let t = Instant::now();
            let _s = ort::session::Session::builder(&env)
                .unwrap()
                .with_optimization_level(lvl)
                .unwrap()
                .with_intra_threads(2)
                .unwrap()
                .with_config_entry("session.disable_prepacking", prepack)
                .unwrap()
                .commit_from_memory(&bytes)
                .unwrap();
            println!("commit {name} noprepack={prepack} {:?}", t.elapsed());
        }
    }
    let out = std::path::PathBuf::from("/tmp/opt.onnx");
    let t = Instant::now();
    let _s = ort::session::Session::builder(&env)
        .unwrap()
        .with_optimization_level(ort::session::builder::GraphOptimizationLevel::Level3)
        .unwrap()
        .with_intra_threads(2)
        .unwrap()
        .with_optimized_model_path(&out)
        .unwrap()
        .commit_from_memory(&bytes)
        .unwrap();
    println!("commit+save {:?} size {}", t.elapsed(), std::fs::metadata(&out).unwrap().len());
    let opt = std::fs::read(&out).unwrap();
    for (lvl, name) in [
        (ort::session::builder::GraphOptimizationLevel::Level3, "L3"),
        (ort::session::builder::GraphOptimizationLevel::Disable, "off"),
    ] {
        let t = Instant::now();
        let mut s = ort::session::Session::builder(&env)
            .unwrap()
            .with_optimization_level(lvl)
            .unwrap()
            .with_intra_threads(2)
            .unwrap()
            .commit_from_memory(&opt)
            .unwrap();
        println!("commit optimized {name} {:?}", t.elapsed());
        let _ = &mut s;
    }
}
#[allow(dead_code)]
fn unused() {}
