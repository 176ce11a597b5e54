//! The caller's command-line git configuration: what `git -c key=value neo …` and
//! `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>` hand to a git command through
//! its environment. The front end reads it here and gives it to the library as plain data
//! (`SessionOptions::config`), so a command sees exactly the configuration git gives its caller,
//! whether it runs in its own process or in the background server.

use super::Env;
use git_neo::Error;

/// The environment variables that carry command-line configuration, besides the numbered
/// `GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>` pairs.
pub const VARS: &[&str] = &["GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"];

/// Variables naming which configuration files git reads; they are part of what a server was
/// started with, so a caller with other ones gets its own server.
pub const FILE_VARS: &[&str] = &["GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM"];

/// Every variable (name, value) that carries command-line configuration in `env`.
pub fn variables(env: Env) -> Vec<(String, String)> {
    let mut vars: Vec<(String, String)> =
        VARS.iter().chain(FILE_VARS).filter_map(|k| env(k).map(|v| (k.to_string(), v))).collect();
    let count = env("GIT_CONFIG_COUNT").and_then(|c| c.trim().parse::<usize>().ok()).unwrap_or(0);
    for i in 0..count.min(10_000) {
        for k in [format!("GIT_CONFIG_KEY_{i}"), format!("GIT_CONFIG_VALUE_{i}")] {
            if let Some(v) = env(&k) {
                vars.push((k, v));
            }
        }
    }
    vars
}

/// The command-line configuration in `env`, as `key=value` (or a bare `key`, which git reads as
/// true), in the order git applies it: the numbered pairs, then `GIT_CONFIG_PARAMETERS`.
pub fn overrides(env: Env) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    if let Some(count) = env("GIT_CONFIG_COUNT").filter(|c| !c.trim().is_empty()) {
        let n: usize = count.trim().parse().map_err(|_| Error::Environment {
            variable: "GIT_CONFIG_COUNT".into(),
            message: format!("{count:?} is not a whole number; set it to how many GIT_CONFIG_KEY_<n> there are"),
        })?;
        for i in 0..n {
            let key =
                env(&format!("GIT_CONFIG_KEY_{i}")).filter(|k| !k.is_empty()).ok_or_else(|| Error::Environment {
                    variable: format!("GIT_CONFIG_KEY_{i}"),
                    message: format!("GIT_CONFIG_COUNT is {n}, but GIT_CONFIG_KEY_{i} is not set"),
                })?;
            let value = env(&format!("GIT_CONFIG_VALUE_{i}")).ok_or_else(|| Error::Environment {
                variable: format!("GIT_CONFIG_VALUE_{i}"),
                message: format!("GIT_CONFIG_COUNT is {n}, but GIT_CONFIG_VALUE_{i} is not set"),
            })?;
            out.push(format!("{key}={value}"));
        }
    }
    if let Some(params) = env("GIT_CONFIG_PARAMETERS") {
        out.extend(parse_parameters(&params).map_err(|why| Error::Environment {
            variable: "GIT_CONFIG_PARAMETERS".into(),
            message: format!("{why}; it is set by `git -c`, so pass the setting there as key=value"),
        })?);
    }
    Ok(out)
}

/// Parse `GIT_CONFIG_PARAMETERS`: whitespace-separated shell-quoted entries, either
/// `'key=value'` (older git) or `'key'='value'` (git 2.31 and later), a bare `'key'` meaning true.
/// Inside quotes, git writes `'` as `'\''` and `!` as `'\!'`.
pub fn parse_parameters(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = s;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return Ok(out);
        }
        let (key, after) = dequote(rest)?;
        rest = after;
        if let Some(after) = rest.strip_prefix('=') {
            // 'key'='value', or 'key'= with nothing after (no value).
            if after.starts_with('\'') {
                let (value, after) = dequote(after)?;
                out.push(format!("{key}={value}"));
                rest = after;
            } else {
                out.push(key);
                rest = after;
            }
        } else {
            out.push(key);
        }
    }
}

/// One single-quoted word at the start of `s`, and what follows it.
fn dequote(s: &str) -> Result<(String, &str), String> {
    let mut chars = s.char_indices();
    match chars.next() {
        Some((_, '\'')) => {}
        _ => return Err(format!("expected a quoted entry at {:?}", s.chars().take(20).collect::<String>())),
    }
    let mut word = String::new();
    let bytes = s.as_bytes();
    while let Some((i, c)) = chars.next() {
        if c != '\'' {
            word.push(c);
            continue;
        }
        // A closing quote, unless it is git's escape: '\'' or '\!'.
        let tail = &bytes[i + 1..];
        if tail.len() >= 3 && tail[0] == b'\\' && (tail[1] == b'\'' || tail[1] == b'!') && tail[2] == b'\'' {
            word.push(tail[1] as char);
            chars.nth(2);
            continue;
        }
        return Ok((word, &s[i + 1..]));
    }
    Err("an entry's quote is not closed".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_formats_of_git_config_parameters_parse() {
        assert_eq!(parse_parameters("'neo.ref'='refs/heads/other'").expect("parses"), vec!["neo.ref=refs/heads/other"]);
        assert_eq!(
            parse_parameters(" 'neo.ref=refs/heads/x' 'core.bare'").expect("parses"),
            vec!["neo.ref=refs/heads/x", "core.bare"]
        );
        assert_eq!(parse_parameters(r"'user.name'='it'\''s'").expect("parses"), vec!["user.name=it's"]);
        assert_eq!(parse_parameters(r"'a.b'='wow'\!''").expect("parses"), vec!["a.b=wow!"]);
        assert!(parse_parameters("'unclosed").is_err());
        assert!(parse_parameters("bare").is_err());
    }

    #[test]
    fn numbered_pairs_come_before_parameters_and_a_missing_one_is_named() {
        let vars = [
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "neo.ref"),
            ("GIT_CONFIG_VALUE_0", "refs/heads/a"),
            ("GIT_CONFIG_PARAMETERS", "'neo.ref'='refs/heads/b'"),
        ];
        let env = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string());
        assert_eq!(overrides(&env).expect("parses"), vec!["neo.ref=refs/heads/a", "neo.ref=refs/heads/b"]);
        let broken = |k: &str| (k == "GIT_CONFIG_COUNT").then(|| "2".to_string());
        let err = overrides(&broken).unwrap_err().to_string();
        assert!(err.contains("GIT_CONFIG_KEY_0"), "{err}");
    }
}
