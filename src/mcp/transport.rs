//! The MCP server's stdio transport: newline-delimited JSON-RPC on stdin and stdout.
//!
//! Ours rather than the SDK's because of what it does with bad input: a line that is not JSON
//! gets the JSON-RPC answer `-32700 Parse error` (with `id: null`, since none can be read), JSON
//! that is no message gets `-32600 Invalid Request`, a line longer than [`MAX_LINE`] is refused
//! without being held in memory, and the server goes on serving after each. (The SDK drops such
//! lines silently, and a client waiting for an answer waits for ever.)
//!
//! Lines are read on a thread of their own and handed over through a channel, so a read is never
//! half-done when the service loop stops waiting for one; answers to bad lines and the service's
//! own messages are written through one lock, a whole line at a time.

use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

/// The longest line read, in bytes. Every argument is bounded by its tool's schema (the largest,
/// a fact's body, at 64 KiB), so no valid call comes near this.
pub const MAX_LINE: usize = 1 << 20;

/// What one input line is.
#[derive(Debug)]
pub enum Line {
    /// A message for the service.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Not a message: write this JSON-RPC error back and go on.
    Reply(String),
    /// Nothing to do (a blank line, or a notification this server does not know).
    Skip,
}

fn error_reply(id: &serde_json::Value, code: i64, message: &str) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// Classify one line (without its newline).
pub fn classify(line: &[u8]) -> Line {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Line::Skip;
    }
    let value: serde_json::Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => return Line::Reply(error_reply(&serde_json::Value::Null, -32700, &format!("Parse error: {e}"))),
    };
    let id = value.get("id").cloned().unwrap_or(serde_json::Value::Null);
    let is_notification = value.get("method").is_some() && value.get("id").is_none();
    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
        Ok(m) => Line::Message(Box::new(m)),
        // A notification has no answer, not even an error one.
        Err(_) if is_notification => Line::Skip,
        Err(e) => Line::Reply(error_reply(&id, -32600, &format!("Invalid Request: {e}"))),
    }
}

/// Read lines from `input` until it ends, bounded by [`MAX_LINE`]: each is classified, answered
/// through `output` when it is no message, and otherwise handed to `deliver` (which returns false
/// when nobody listens any more).
pub fn read_lines(
    mut input: impl BufRead,
    output: &Mutex<Box<dyn Write + Send>>,
    mut deliver: impl FnMut(Box<RxJsonRpcMessage<RoleServer>>) -> bool,
) {
    let mut line = Vec::new();
    let mut oversized = false;
    loop {
        let (used, ended) = match input.fill_buf() {
            Ok([]) => (0, None),
            Ok(buf) => {
                let newline = buf.iter().position(|b| *b == b'\n');
                let take = newline.map_or(buf.len(), |i| i + 1);
                if !oversized && line.len() + take > MAX_LINE + 1 {
                    // Keep what fits: its start is where a request names its id.
                    oversized = true;
                    let room = (MAX_LINE + 1).saturating_sub(line.len()).min(take);
                    line.extend_from_slice(&buf[..room]);
                }
                if !oversized {
                    line.extend_from_slice(&buf[..take]);
                }
                (take, Some(newline.is_some()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => (0, None),
        };
        input.consume(used);
        let at_end = ended.is_none();
        if ended == Some(false) {
            continue;
        }
        let reply = if oversized {
            oversized = false;
            // Answered with the request's own id when its start names one, so a client waiting
            // for that answer gets it.
            let field = cut_field(&line).map(|f| format!("{f} runs past the limit; ")).unwrap_or_default();
            Some(error_reply(
                &top_level_id(&line).unwrap_or(serde_json::Value::Null),
                -32600,
                &format!(
                    "Invalid Request: the line is longer than {MAX_LINE} bytes: {field}every argument is \
                     bounded by its tool's inputSchema (maxLength, maxItems), keep within it"
                ),
            ))
        } else if line.is_empty() {
            None
        } else {
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            match classify(text) {
                Line::Message(m) => {
                    if !deliver(m) {
                        return;
                    }
                    None
                }
                Line::Reply(r) => Some(r),
                Line::Skip => None,
            }
        };
        line.clear();
        if let Some(r) = reply {
            if write_line(output, r.as_bytes()).is_err() {
                return;
            }
        }
        if at_end {
            return;
        }
    }
}

/// The `id` member of the JSON object that `text` starts (when it lies within `text`, which may
/// be cut short): a number, a string or null, read at the object's top level only.
pub fn top_level_id(text: &[u8]) -> Option<serde_json::Value> {
    let mut depth = 0usize;
    let mut i = 0;
    let mut key: Option<(usize, usize)> = None;
    let string_end = |from: usize| -> Option<usize> {
        let mut j = from + 1;
        while j < text.len() {
            match text[j] {
                b'\\' => j += 2,
                b'"' => return Some(j + 1),
                _ => j += 1,
            }
        }
        None
    };
    while i < text.len() {
        match text[i] {
            b'"' => {
                let end = string_end(i)?;
                if depth == 1 {
                    key = Some((i, end));
                }
                i = end;
                continue;
            }
            b':' if depth == 1 => {
                let (a, b) = key.take()?;
                if &text[a..b] == b"\"id\"" {
                    let mut v = i + 1;
                    while v < text.len() && text[v].is_ascii_whitespace() {
                        v += 1;
                    }
                    let end = if text.get(v) == Some(&b'"') {
                        string_end(v)?
                    } else {
                        (v..text.len()).find(|&j| matches!(text[j], b',' | b'}') || text[j].is_ascii_whitespace())?
                    };
                    return serde_json::from_slice::<serde_json::Value>(&text[v..end])
                        .ok()
                        .filter(|id| id.is_number() || id.is_string() || id.is_null());
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            _ => {}
        }
        i += 1;
    }
    None
}

/// The name of the member whose string value `text` ends inside (a line cut at the limit): the
/// argument that made the line too long, to name in the refusal.
pub fn cut_field(text: &[u8]) -> Option<String> {
    let mut i = 0;
    let mut last_start = None;
    let mut open = None;
    while i < text.len() {
        if text[i] == b'"' {
            let start = i;
            i += 1;
            while i < text.len() && text[i] != b'"' {
                i += if text[i] == b'\\' { 2 } else { 1 };
            }
            if i >= text.len() {
                open = Some(start);
                break;
            }
            last_start = Some((start, i + 1));
        }
        i += 1;
    }
    let open = open?;
    let (a, b) = last_start?;
    let between = &text[b..open];
    (between.iter().filter(|c| !c.is_ascii_whitespace()).eq(b":".iter()))
        .then(|| serde_json::from_slice::<String>(&text[a..b]).ok())
        .flatten()
}

fn write_line(output: &Mutex<Box<dyn Write + Send>>, line: &[u8]) -> std::io::Result<()> {
    let mut out = output.lock().unwrap_or_else(|p| p.into_inner());
    out.write_all(line)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// What the transport runs after each answer is written (the server's work between calls).
pub type AfterAnswer = Arc<dyn Fn() + Send + Sync>;

/// The transport over this process's stdin and stdout.
pub struct Stdio {
    output: Arc<Mutex<Box<dyn Write + Send>>>,
    messages: tokio::sync::mpsc::UnboundedReceiver<Box<RxJsonRpcMessage<RoleServer>>>,
    after_answer: Option<AfterAnswer>,
}

impl Stdio {
    /// Start reading stdin on a thread of its own.
    pub fn new() -> Stdio {
        let output: Arc<Mutex<Box<dyn Write + Send>>> = Arc::new(Mutex::new(Box::new(std::io::stdout())));
        let (send, messages) = tokio::sync::mpsc::unbounded_channel();
        let out = output.clone();
        std::thread::spawn(move || {
            read_lines(std::io::stdin().lock(), &out, |m| send.send(m).is_ok());
        });
        Stdio { output, messages, after_answer: None }
    }

    /// Run `f` after each answer to a request is written and flushed: what it does costs the
    /// client nothing (it has its answer), only a request that arrives meanwhile waits.
    pub fn after_answer(mut self, f: AfterAnswer) -> Stdio {
        self.after_answer = Some(f);
        self
    }
}

impl Transport<RoleServer> for Stdio {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let output = self.output.clone();
        let after = self.after_answer.clone().filter(|_| matches!(item, rmcp::model::JsonRpcMessage::Response(_)));
        async move {
            let line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            write_line(&output, &line)?;
            if let Some(after) = after {
                after();
            }
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        self.messages.recv().await.map(|m| *m)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.messages.close();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &[u8]) -> (Vec<serde_json::Value>, usize) {
        run_with(input, 7)
    }

    /// Read `input` through a buffer of `capacity` bytes: the replies written, and how many
    /// messages reached the service.
    fn run_with(input: &[u8], capacity: usize) -> (Vec<serde_json::Value>, usize) {
        let sink: Arc<Mutex<Vec<u8>>> = Arc::default();
        struct Sink(Arc<Mutex<Vec<u8>>>);
        impl Write for Sink {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().expect("the sink's lock").extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let output: Mutex<Box<dyn Write + Send>> = Mutex::new(Box::new(Sink(sink.clone())));
        let mut delivered = 0;
        read_lines(std::io::BufReader::with_capacity(capacity, input), &output, |_| {
            delivered += 1;
            true
        });
        let text = String::from_utf8(sink.lock().expect("the sink's lock").clone()).expect("UTF-8 replies");
        (text.lines().map(|l| serde_json::from_str(l).expect("a JSON reply")).collect(), delivered)
    }

    #[test]
    fn bad_lines_are_answered_and_reading_goes_on() {
        let ping = br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
        let mut input = b"not json\n\n{\"jsonrpc\":\"2.0\",\"id\":3}\n".to_vec();
        input.extend_from_slice(ping);
        input.extend_from_slice(b"\n\xff\xfe\n");
        input.extend_from_slice(ping);
        let (replies, delivered) = run(&input);
        assert_eq!(delivered, 2, "both pings reach the service: {replies:?}");
        let codes: Vec<i64> = replies.iter().map(|r| r["error"]["code"].as_i64().expect("an error code")).collect();
        assert_eq!(codes, vec![-32700, -32600, -32700]);
        assert_eq!(replies[1]["id"], 3, "an invalid request's id is echoed");
        assert!(replies[0]["id"].is_null());
    }

    #[test]
    fn an_oversized_line_is_refused_without_being_held() {
        let mut input = vec![b'x'; MAX_LINE + 10];
        input.push(b'\n');
        input.extend_from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        let (replies, delivered) = run(&input);
        assert_eq!(delivered, 1);
        assert_eq!(replies.len(), 1);
        assert!(replies[0]["error"]["message"].as_str().expect("an error message").contains("longer than"));
    }

    #[test]
    fn an_oversized_request_is_answered_with_its_id_and_the_field_named() {
        let mut input =
            br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"recall","arguments":{"query":""#
                .to_vec();
        input.extend(std::iter::repeat_n(b'a', MAX_LINE + 10));
        input.extend_from_slice(b"\"}}}\n");
        let (replies, delivered) = run(&input);
        assert_eq!(delivered, 0);
        assert_eq!(replies[0]["id"], 42, "{replies:?}");
        assert!(
            replies[0]["error"]["message"].as_str().expect("an error message").contains("query runs past"),
            "{replies:?}"
        );
    }

    #[test]
    fn the_id_is_read_at_the_top_level_only() {
        assert_eq!(top_level_id(br#"{"params":{"id":9},"id":"x"}"#), Some(serde_json::json!("x")));
        assert_eq!(top_level_id(br#"{"params":{"id":9}"#), None);
        assert_eq!(top_level_id(br#"{"id" : 3, "method":"a"}"#), Some(serde_json::json!(3)));
        assert_eq!(top_level_id(br#"{"id":{"a":1}}"#), None);
        assert_eq!(cut_field(br#"{"a":{"body":"abc"#).as_deref(), Some("body"));
        assert_eq!(cut_field(br#"{"a":["abc"#), None);
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// One input line: a ping that must reach the service, a line that must be answered,
        /// or a blank line that must not.
        #[derive(Clone, Debug)]
        enum Input {
            Ping(u32),
            Garbage(Vec<u8>),
            Invalid(u32),
            Blank,
            Oversized(usize),
        }

        fn input() -> impl Strategy<Value = Input> {
            prop_oneof![
                4 => any::<u32>().prop_map(Input::Ping),
                3 => proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 1..80)
                    .prop_filter("not blank", |v| !v.iter().all(u8::is_ascii_whitespace))
                    .prop_filter("not a message", |v| !matches!(classify(v), Line::Message(_) | Line::Skip))
                    .prop_map(Input::Garbage),
                1 => any::<u32>().prop_map(Input::Invalid),
                1 => Just(Input::Blank),
                1 => (1usize..4096).prop_map(Input::Oversized),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig {
                cases: 64,
                failure_persistence: None,
                rng_seed: proptest::test_runner::RngSeed::Fixed(0x6e65_6f32),
                ..ProptestConfig::default()
            })]

            #[test]
            fn every_line_is_delivered_or_answered_once_whatever_the_buffer(
                inputs in proptest::collection::vec(input(), 0..12),
                capacity in 1usize..300,
                final_newline in any::<bool>(),
            ) {
                let mut bytes = Vec::new();
                let (mut pings, mut answers) = (0usize, Vec::new());
                for item in &inputs {
                    match item {
                        Input::Ping(id) => {
                            bytes.extend_from_slice(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#).as_bytes());
                            pings += 1;
                        }
                        Input::Garbage(g) => {
                            bytes.extend_from_slice(g);
                            answers.push(None);
                        }
                        Input::Invalid(id) => {
                            bytes.extend_from_slice(format!(r#"{{"jsonrpc":"2.0","id":{id}}}"#).as_bytes());
                            answers.push(Some(serde_json::json!(id)));
                        }
                        Input::Blank => bytes.extend_from_slice(b"  "),
                        Input::Oversized(extra) => {
                            bytes.extend_from_slice(br#"{"id":"big","params":{"q":""#);
                            bytes.extend(std::iter::repeat_n(b'q', MAX_LINE + extra));
                            bytes.extend_from_slice(br#""}}"#);
                            answers.push(Some(serde_json::json!("big")));
                        }
                    }
                    bytes.push(b'\n');
                }
                if !final_newline {
                    bytes.pop();
                }
                let (replies, delivered) = run_with(&bytes, capacity);
                prop_assert_eq!(delivered, pings, "every well-formed request reaches the server, once");
                prop_assert_eq!(replies.len(), answers.len(), "{:?}", replies);
                for (reply, want) in replies.iter().zip(&answers) {
                    prop_assert!(reply["error"]["code"].is_i64());
                    if let Some(id) = want {
                        prop_assert_eq!(&reply["id"], id);
                    }
                }
            }

            #[test]
            fn the_scanners_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
                let _ = top_level_id(&bytes);
                let _ = cut_field(&bytes);
                let _ = classify(&bytes);
            }
        }
    }
}
