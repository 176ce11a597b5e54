#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]
use git_neo::embed::{Embedder, FastEmbedder, ModelPaths, RunOptions};
use std::time::Instant;
fn main() {
    let root = std::path::PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/git-neo");
    let paths = ModelPaths::in_cache(&root);
    let t = Instant::now();
    let threads = std::env::var("T").ok().and_then(|v| v.parse().ok());
    let mut e = FastEmbedder::load_with(&paths, &RunOptions { threads, ..Default::default() }).unwrap();
    println!("load {:?}", t.elapsed());
    let t = Instant::now();
    e.embed(&["hello world".to_string()]).unwrap();
    println!("first embed {:?}", t.elapsed());
    let texts: Vec<String> =
        (0..100).map(|i| format!("Service {i} keeps the queue number {i} bounded under load")).collect();
    let t = Instant::now();
    e.embed(&texts).unwrap();
    println!("embed 100 {:?}", t.elapsed());
    let mut v = Vec::new();
    for i in 0..50 {
        let t = Instant::now();
        e.embed(&[format!("how do retries behave under load {i}")]).unwrap();
        v.push(t.elapsed());
    }
    v.sort();
    println!("one query p50 {:?}", v[25]);
    let mut v = Vec::new();
    for i in 0..50 {
        let t = Instant::now();
        e.embed(&[format!("Retries use exponential backoff with jitter capped at thirty seconds in service {i}; the ledger service keeps a bounded queue")]).unwrap();
        v.push(t.elapsed());
    }
    v.sort();
    println!("one fact p50 {:?}", v[25]);
}
