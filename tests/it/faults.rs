//! Fault injection for the background server: clients that stall, flood, or hang up part-way,
//! fifty at once, and a server killed in the middle of writes. In every case nothing is lost (each
//! add that exits 0 has its record on the ref, which stays at a valid commit) and nobody waits
//! for a misbehaving peer longer than the timeouts (the server's 5 s per connection, the
//! client's `GIT_NEO_DAEMON_TIMEOUT`).

use crate::edges::{list_subjects, neo_in, ok, Server};
use crate::support::{stderr, Sandbox};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

fn recall_quickly(sb: &Sandbox, repo: &Path, bound: Duration) {
    let start = Instant::now();
    let out = neo_in(sb, repo, true, &["recall", "deploys from the main branch"]);
    assert!(ok(&out).contains("Deploys"), "recall answered");
    assert!(start.elapsed() < bound, "recall waited {:?} (bound {bound:?})", start.elapsed());
}

fn seeded(sb: &Sandbox) -> std::path::PathBuf {
    let repo = sb.repo("r");
    ok(&neo_in(sb, &repo, false, &["add", "-t", "decision", "-s", "Deploys go out from the main branch"]));
    repo
}

/// A request line for the server, as a client sends it (the protocol is line-delimited JSON).
fn run_request(sb: &Sandbox, repo: &Path, argv: &[&str]) -> Vec<u8> {
    let tree = repo.canonicalize().unwrap();
    let home = sb.dir.path();
    let mut argv_all = vec!["git-neo"];
    argv_all.extend_from_slice(argv);
    // The server serves only its own version: ask it which that is, as a client of this build knows.
    let version = crate::daemon::status(sb, repo)["version"].clone();
    let mut line = serde_json::to_vec(&serde_json::json!({
        "type": "run",
        "version": version,
        "argv": argv_all,
        "cwd": tree,
        "tree": tree,
        "env": {
            "GIT_NEO_EMBEDDER": "hash",
            "GIT_AUTHOR_NAME": "Ada Tester",
            "GIT_AUTHOR_EMAIL": "ada@example.com",
            "GIT_NEO_NOW": crate::support::NOW,
            "HOME": home,
            "NO_COLOR": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": home.join("gitconfig"),
        },
        "stdin": null,
        "colour": false,
    }))
    .unwrap();
    line.push(b'\n');
    line
}

#[test]
fn stalled_clients_block_nobody() {
    let sb = Sandbox::new();
    let repo = seeded(&sb);
    let server = Server::start(&sb, &repo, &[]);
    // One sends nothing, one sends half a request and stops.
    let _silent = UnixStream::connect(server.socket()).unwrap();
    let mut half = UnixStream::connect(server.socket()).unwrap();
    let request = run_request(&sb, &repo, &["recall", "deploys"]);
    half.write_all(&request[..request.len() / 2]).unwrap();
    for _ in 0..3 {
        recall_quickly(&sb, &repo, Duration::from_secs(4));
    }
    assert!(server.served(&sb) >= 3, "served by the server, not around it");
    // The server gives up on the staller after its timeout and closes the connection.
    half.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let start = Instant::now();
    let mut rest = Vec::new();
    let _ = half.read_to_end(&mut rest);
    assert!(start.elapsed() < Duration::from_secs(15), "the stalled connection was closed");
}

#[test]
fn a_client_that_floods_the_socket_is_cut_off_and_others_are_served() {
    let sb = Sandbox::new();
    let repo = seeded(&sb);
    let server = Server::start(&sb, &repo, &[]);
    let socket = server.socket();
    let flood = std::thread::spawn(move || {
        let mut s = UnixStream::connect(socket).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
        let chunk = vec![b'x'; 1 << 20];
        let mut sent = 0usize;
        while sent < 100 << 20 {
            if s.write_all(&chunk).is_err() {
                break;
            }
            sent += chunk.len();
        }
        sent
    });
    recall_quickly(&sb, &repo, Duration::from_secs(6));
    let sent = flood.join().unwrap();
    assert!(sent < 100 << 20, "the server stopped reading the 100 MB line ({sent} bytes taken)");
    recall_quickly(&sb, &repo, Duration::from_secs(4));
    assert!(server.status(&sb, &[])["running"] == true);
}

#[test]
fn a_client_that_hangs_up_mid_answer_loses_nothing() {
    let sb = Sandbox::new();
    let repo = seeded(&sb);
    let server = Server::start(&sb, &repo, &[]);
    for i in 0..5 {
        let mut s = UnixStream::connect(server.socket()).unwrap();
        s.write_all(&run_request(&sb, &repo, &["add", "-t", "decision", "-s", &format!("Hung-up write number {i}")]))
            .unwrap();
        // Read one byte of the answer at most, then hang up.
        if i % 2 == 0 {
            let mut one = [0u8; 1];
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let _ = s.read(&mut one);
        }
        drop(s);
    }
    // The server runs each command it received whole: every write lands, and it goes on serving.
    let start = Instant::now();
    loop {
        let subjects = list_subjects(&sb, &repo, None);
        if (0..5).all(|i| subjects.contains(&format!("Hung-up write number {i}"))) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "writes landed: {subjects:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    recall_quickly(&sb, &repo, Duration::from_secs(4));
    ok(&neo_in(&sb, &repo, false, &["verify"]));
}

#[test]
fn fifty_clients_at_once_all_land() {
    let sb = Sandbox::new();
    let repo = seeded(&sb);
    let server = Server::start(&sb, &repo, &[]);
    let start = Instant::now();
    let children: Vec<_> = (0..50)
        .map(|i| {
            let mut cmd = sb.neo_cmd(&repo);
            cmd.env("GIT_NEO_EMBEDDER", "hash").env("GIT_NEO_DAEMON", "on");
            if i % 5 == 0 {
                cmd.args(["recall", "deploys"]);
            } else {
                cmd.args(["add", "-t", "decision", "-s", &format!("Concurrent fact number {i}")]);
            }
            cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert!(start.elapsed() < Duration::from_secs(120), "fifty clients took {:?}", start.elapsed());
    let subjects = list_subjects(&sb, &repo, None);
    for i in (0..50).filter(|i| i % 5 != 0) {
        assert!(subjects.contains(&format!("Concurrent fact number {i}")), "fact {i} landed");
    }
    assert_eq!(subjects.len(), 41, "{subjects:?}");
    assert!(server.served(&sb) > 0);
    ok(&neo_in(&sb, &repo, false, &["verify"]));
}

#[test]
fn a_server_killed_mid_write_loses_nothing() {
    let sb = Sandbox::new();
    let repo = seeded(&sb);
    let mut server = Server::start(&sb, &repo, &[]);
    let children: Vec<_> = (0..20)
        .map(|i| {
            sb.neo_cmd(&repo)
                .env("GIT_NEO_EMBEDDER", "hash")
                .env("GIT_NEO_DAEMON", "on")
                // A client that finds the server gone starts another: let it go soon.
                .env("GIT_NEO_DAEMON_IDLE", "3")
                .args(["add", "-t", "decision", "-s", &format!("Written while the server died {i}")])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(150));
    server.kill();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "every add completes, through the server or itself: {}", stderr(&out));
    }
    let subjects = list_subjects(&sb, &repo, None);
    for i in 0..20 {
        assert!(subjects.contains(&format!("Written while the server died {i}")), "write {i} landed");
    }
    assert_eq!(subjects.len(), 21, "each exactly once: {subjects:?}");
    ok(&neo_in(&sb, &repo, false, &["verify"]));
}
