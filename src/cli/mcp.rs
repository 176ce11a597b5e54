//! `git neo mcp [--http ADDR [--token-file FILE]]`: the MCP server's flags, its bearer token
//! (read from a file, or made up and printed) and the line that says where it listens.

use super::Ctx;
use crate::mcp;
use git_neo::api::Session;
use git_neo::Error;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct McpArgs {
    /// Serve the streamable HTTP transport on this address instead of stdio: HOST:PORT, or a
    /// port on 127.0.0.1 (0 picks a free one). Every request needs the bearer token.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Read the bearer token from this file (one line, 16+ characters); without it a new token
    /// is made up and printed.
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
}

/// A new random token: 32 bytes from the system's random source, as hex.
fn new_token() -> Result<String, Error> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| Error::Io { context: "reading /dev/urandom for a new MCP token".into(), source: e })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn read_token(path: &std::path::Path) -> Result<String, Error> {
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::invalid("--token-file", format!("cannot read {}: {e}", path.display())))?;
    if meta.len() > mcp::http::MAX_TOKEN as u64 + 2 {
        return Err(Error::invalid("--token-file", format!("{} is not one line of token", path.display())));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::invalid("--token-file", format!("cannot read {}: {e}", path.display())))?;
    mcp::http::check_token(&text)
        .map(str::to_string)
        .map_err(|m| Error::invalid("--token-file", m.trim_start_matches("--token-file: ")))
}

pub fn run(ctx: &mut Ctx, args: McpArgs, session: Session) -> Result<(), Error> {
    let fetch = super::daemon::fetch_org_in_background;
    let Some(addr) = args.http else {
        return mcp::serve(session, fetch);
    };
    let addr = mcp::http::parse_addr(&addr).map_err(|m| Error::invalid("--http", m.trim_start_matches("--http: ")))?;
    let (token, made_up) = match &args.token_file {
        Some(path) => (read_token(path)?, false),
        None => (new_token()?, true),
    };
    let shown = made_up.then(|| token.clone());
    let server = mcp::NeoServer::new(session, fetch);
    mcp::http::serve(server, addr, token, |bound| {
        let url = format!("http://{bound}{}", mcp::http::PATH);
        if ctx.out.json {
            ctx.out.json(&serde_json::json!({ "url": url, "token": shown }));
        } else {
            ctx.out.line(&format!("MCP over HTTP at {url}"));
            match &shown {
                Some(t) => ctx.out.line(&format!("token: {t}")),
                None => ctx.out.line("token: the one in --token-file"),
            }
            ctx.out.note("send it as `Authorization: Bearer <token>`; stop with Ctrl-C");
        }
    })
}
