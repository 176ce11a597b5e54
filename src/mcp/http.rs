//! `git neo mcp --http ADDR`: the same MCP server over the streamable HTTP transport, for an
//! agent in a container or on another host than the clone whose memory it uses.
//!
//! rmcp's `StreamableHttpService` speaks the protocol (sessions, SSE or JSON answers); hyper
//! serves it over HTTP/1.1 on a tokio listener. In front of it sits one rule of ours: every
//! request carries `Authorization: Bearer <token>` or is answered `401` without reaching the
//! service. The token is compared in constant time, never logged, and never part of a reply.
//!
//! Bound to a loopback address (the default), rmcp's Host-header check also refuses requests
//! whose `Host` is not a loopback name (DNS rebinding). Bound to another address on purpose (a
//! container's port), the Host check is off: the client's name for the host cannot be known in
//! advance, and the token is what guards the memory.
//!
//! As over stdio, the server does its work between calls once an answer is out (the indexes catch
//! up to a call's write): the body of every answer carries [`AfterBody`], which hands that work
//! to the runtime when hyper has taken the body's last frame.

use super::transport::AfterAnswer;
use super::NeoServer;
use git_neo::Error;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;

/// The address `--http` binds when given only a port, and the host it binds by default.
pub const DEFAULT_HOST: &str = "127.0.0.1";

/// The path the MCP endpoint is served at.
pub const PATH: &str = "/mcp";

#[cfg(test)]
mod limit_tests {
    use super::*;

    #[test]
    fn connections_are_capped_per_address_and_in_all() {
        let limits = Arc::new(Limits::default());
        let a: std::net::IpAddr = "127.0.0.1".parse().expect("an address");
        let mapped: std::net::IpAddr = "::ffff:127.0.0.1".parse().expect("an address");
        let mut held: Vec<Slot> =
            (0..MAX_CONNECTIONS_PER_ADDRESS).map(|_| limits.admit(a).expect("under the cap")).collect();
        assert!(limits.admit(a).is_none(), "one address over its cap");
        assert!(limits.admit(mapped).is_none(), "the same address spelled in IPv6");
        held.pop();
        assert!(limits.admit(a).is_some(), "a closed connection gives its place back");
        let mut others = Vec::new();
        for i in 0..MAX_CONNECTIONS {
            if let Some(s) = limits.admit(std::net::IpAddr::from([10, 0, (i / 200) as u8, (i % 200) as u8])) {
                others.push(s);
            }
        }
        assert_eq!(held.len() + others.len(), MAX_CONNECTIONS, "every address together under the total cap");
    }
}

/// The longest token accepted from a file, in bytes (a token is a line, not a document).
pub const MAX_TOKEN: usize = 512;

/// Parse `--http`'s value: `HOST:PORT`, `[V6]:PORT` or a bare `PORT` (on [`DEFAULT_HOST`]).
pub fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    let full = if s.chars().all(|c| c.is_ascii_digit()) && !s.is_empty() {
        format!("{DEFAULT_HOST}:{s}")
    } else {
        s.to_string()
    };
    full.parse().map_err(|_| {
        format!("--http: {s:?} is not an address to listen on; give HOST:PORT (e.g. 127.0.0.1:8765, or port 0 for any free one) or a port")
    })
}

/// Check a token read from a file or made up: one line of printable ASCII, 16 to [`MAX_TOKEN`] bytes.
pub fn check_token(token: &str) -> Result<&str, String> {
    let t = token.trim();
    if t.len() < 16 {
        return Err("--token-file: the token is shorter than 16 characters; write a longer random one".into());
    }
    if t.len() > MAX_TOKEN {
        return Err(format!("--token-file: the token is longer than {MAX_TOKEN} bytes; it is one line"));
    }
    if !t.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(
            "--token-file: the token has spaces or non-ASCII characters; use letters, digits and punctuation only"
                .into(),
        );
    }
    Ok(t)
}

/// Whether an `Authorization` header value carries `token` as a bearer token, compared in
/// constant time (in the token's length) so a wrong guess learns nothing from the timing.
pub fn authorized(header: Option<&[u8]>, token: &str) -> bool {
    let Some(value) = header else { return false };
    // The scheme name is case-insensitive (RFC 9110 §11.1): `Bearer`, `bearer`, `BEARER`.
    let Some(space) = value.iter().position(|&b| b == b' ') else { return false };
    if !value[..space].eq_ignore_ascii_case(b"bearer") {
        return false;
    }
    let given = value[space + 1..].trim_ascii();
    let want = token.as_bytes();
    if given.len() != want.len() {
        return false;
    }
    given.iter().zip(want).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

fn unauthorized() -> hyper::Response<http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>> {
    let body = serde_json::json!({
        "error": "unauthorized",
        "message": "this MCP server needs `Authorization: Bearer <token>`; the token is the one `git neo mcp --http` printed or read from --token-file",
    });
    hyper::Response::builder()
        .status(hyper::StatusCode::UNAUTHORIZED)
        .header(hyper::header::WWW_AUTHENTICATE, "Bearer realm=\"git-neo\"")
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_string())).boxed())
        .unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::new()).boxed()))
}

fn not_found() -> hyper::Response<http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>> {
    hyper::Response::builder()
        .status(hyper::StatusCode::NOT_FOUND)
        .header(hyper::header::CONTENT_TYPE, "text/plain")
        .body(Full::new(Bytes::from(format!("the MCP endpoint is {PATH}\n"))).boxed())
        .unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::new()).boxed()))
}

/// How long a client may take to send a request's head (the request line and headers), and how
/// long a kept-alive connection may wait idle for its next one.
pub const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Most connections open at once, from all addresses.
pub const MAX_CONNECTIONS: usize = 128;
/// Most connections open at once from one address.
pub const MAX_CONNECTIONS_PER_ADDRESS: usize = 32;

/// The connections open now, in all and per address.
#[derive(Default)]
struct Limits {
    open: std::sync::Mutex<(usize, std::collections::HashMap<std::net::IpAddr, usize>)>,
}

/// A connection's place under the caps, given back when it is dropped.
struct Slot {
    limits: Arc<Limits>,
    ip: std::net::IpAddr,
}

impl Limits {
    fn admit(self: &Arc<Self>, ip: std::net::IpAddr) -> Option<Slot> {
        let ip = ip.to_canonical();
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let here = open.1.get(&ip).copied().unwrap_or(0);
        if open.0 >= MAX_CONNECTIONS || here >= MAX_CONNECTIONS_PER_ADDRESS {
            return None;
        }
        open.0 += 1;
        *open.1.entry(ip).or_default() += 1;
        Some(Slot { limits: self.clone(), ip })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.limits.open.lock().unwrap_or_else(|p| p.into_inner());
        open.0 = open.0.saturating_sub(1);
        if let Some(n) = open.1.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.1.remove(&self.ip);
            }
        }
    }
}

/// A response body that, once its last frame has been taken, spawns `after` on the runtime. The
/// runtime serves on one thread, so the task runs only when the connection's task yields: after
/// hyper has written (and flushed) the end of the answer. rmcp's HTTP service itself gives no
/// hook after an answer is written.
struct AfterBody<B> {
    inner: B,
    after: Option<AfterAnswer>,
}

impl<B> hyper::body::Body for AfterBody<B>
where
    B: hyper::body::Body + Unpin,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_frame(cx);
        if let std::task::Poll::Ready(None) = polled {
            if let Some(after) = self.after.take() {
                tokio::spawn(async move { after() });
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// Serve `server` on `addr` until the process is stopped. `ready` is called once with the address
/// actually bound (port 0 picks a free one), before the first request is accepted.
pub fn serve(server: NeoServer, addr: SocketAddr, token: String, ready: impl FnOnce(SocketAddr)) -> Result<(), Error> {
    let io = |context: &str, e: std::io::Error| Error::Io { context: context.into(), source: e };
    super::runtime()?.block_on(async move {
        let listener =
            tokio::net::TcpListener::bind(addr).await.map_err(|e| io(&format!("listening on {addr} (--http)"), e))?;
        let bound = listener.local_addr().map_err(|e| io("reading the address listened on", e))?;
        // Between calls, once an answer is out: the indexes catch up to the call's own write.
        let warm = server.warm.clone();
        let settle: AfterAnswer = Arc::new(move || {
            if let Ok(mut kept) = warm.try_lock() {
                kept.session.settle();
            }
        });
        let mut config = StreamableHttpServerConfig::default();
        // `::ffff:127.0.0.1` is the IPv4 loopback spelled in IPv6: it keeps the Host check too.
        if !addr.ip().to_canonical().is_loopback() {
            config = config.disable_allowed_hosts();
        }
        let service = StreamableHttpService::new(
            move || Ok(server.for_client()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let token: Arc<str> = token.into();
        ready(bound);
        let limits = Arc::new(Limits::default());
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(c) => c,
                // A connection that failed before it was accepted (reset, out of descriptors for
                // a moment) is that client's problem, not the server's: keep accepting.
                Err(_) => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            // Over either cap the connection is closed at once, before a byte is read: a flood of
            // half-open connections from one address cannot crowd out the others, nor all of
            // them together exhaust the process.
            let Some(slot) = limits.admit(peer.ip()) else {
                drop(stream);
                continue;
            };
            let service = service.clone();
            let token = token.clone();
            let settle = settle.clone();
            tokio::spawn(async move {
                let _slot = slot;
                let handler = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                    let service = service.clone();
                    let token = token.clone();
                    let settle = settle.clone();
                    async move {
                        let ok =
                            authorized(req.headers().get(hyper::header::AUTHORIZATION).map(|v| v.as_bytes()), &token);
                        Ok::<_, std::convert::Infallible>(if !ok {
                            unauthorized()
                        } else if req.uri().path() != PATH {
                            not_found()
                        } else {
                            let answer = service.handle(req).await;
                            answer.map(|inner| AfterBody { inner, after: Some(settle) }.boxed())
                        })
                    }
                });
                // A client that hangs up mid-request ends only its own connection.
                // A client must send a whole request head within HEADER_TIMEOUT (also between
                // requests on a kept-alive connection), or the connection is closed.
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(HEADER_TIMEOUT)
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), handler)
                    .await;
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_token_is_authorized() {
        let token = "0123456789abcdef0123";
        assert!(authorized(Some(b"Bearer 0123456789abcdef0123"), token));
        assert!(authorized(Some(b"BEARER 0123456789abcdef0123"), token), "the scheme is case-insensitive");
        assert!(authorized(Some(b"bEaReR 0123456789abcdef0123"), token));
        assert!(!authorized(Some(b"Basic 0123456789abcdef0123"), token));
        assert!(!authorized(None, token));
        assert!(!authorized(Some(b"Bearer 0123456789abcdef012"), token), "a prefix");
        assert!(!authorized(Some(b"Bearer 0123456789abcdef01234"), token), "longer");
        assert!(!authorized(Some(b"Bearer 1123456789abcdef0123"), token), "one byte off");
        assert!(!authorized(Some(b"Basic 0123456789abcdef0123"), token), "another scheme");
        assert!(!authorized(Some(b"0123456789abcdef0123"), token), "no scheme");
    }

    #[test]
    fn addresses_and_tokens_are_checked_with_the_flag_named() {
        assert_eq!(parse_addr("8765").expect("a port"), "127.0.0.1:8765".parse().expect("an address"));
        assert_eq!(parse_addr("0.0.0.0:80").expect("host and port"), "0.0.0.0:80".parse().expect("an address"));
        assert_eq!(parse_addr("[::1]:9").expect("an IPv6 address"), "[::1]:9".parse().expect("an address"));
        assert!(parse_addr("localhost").unwrap_err().starts_with("--http:"));
        assert!(parse_addr("").is_err());
        assert_eq!(check_token("  a-long-enough-token\n").expect("a valid token"), "a-long-enough-token");
        assert!(check_token("short").unwrap_err().contains("16"));
        assert!(check_token("a token with spaces in it").unwrap_err().contains("spaces"));
        assert!(check_token(&"x".repeat(MAX_TOKEN + 1)).is_err());
    }
}
