//! Which relay, and with which token: `--url`, then `HOOKRELAY_URL`, then
//! the profile's URL, then `http://127.0.0.1:8787`; the token from
//! `--token-file`, then `HOOKRELAY_TOKEN`, then the profile (only for the
//! profile's own URL), then, for a loopback relay only, one minted from
//! the project's `.dev.vars`. A token is never sent over plain http to a
//! host that is not loopback, and never printed.

use crate::args::Global;
use crate::dev_token;
use crate::failure::Failure;
use crate::profiles::Store;
use crate::token::Token;
use std::net::IpAddr;
use std::path::PathBuf;

/// Where a relay is when nothing says otherwise: `npm start`.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8787";

/// Where the token came from, for messages (never the token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenFrom {
    /// `--token-file`.
    File(PathBuf),
    /// `HOOKRELAY_TOKEN`.
    Environment,
    /// A stored login.
    Profile(String),
    /// Minted from a `.dev.vars` for a loopback relay.
    DevVars(PathBuf),
}

/// A relay to call, and the token to call it with.
#[derive(Debug)]
pub struct Target {
    /// The relay's origin.
    pub url: String,
    /// The token and where it came from, when there is one.
    pub token: Option<(Token, TokenFrom)>,
}

impl Target {
    /// The token, or the failure saying how to get one.
    pub fn require_token(self) -> Result<(String, Token), Failure> {
        match self.token {
            Some((t, _)) => Ok((self.url, t)),
            None => Err(Failure::usage(
                format!("no token for {}", self.url),
                format!("log in with `hookrelay login --url {}` (a token on standard input), or give one with HOOKRELAY_TOKEN or --token-file", self.url),
            )),
        }
    }
}

/// The relay and token the flags, the environment and the profile name.
pub fn resolve(g: &Global) -> Result<Target, Failure> {
    let store = Store::load()?;
    let named = g.profile.clone().or_else(|| env("HOOKRELAY_PROFILE"));
    let name = named.clone().unwrap_or_else(|| "default".into());
    let profile = store.get(&name);
    if named.is_some() && profile.is_none() {
        return Err(Failure::usage(
            format!("no profile named {name:?} in {}", store.path.display()),
            format!("log in first: `hookrelay login --url <relay> --profile {name}`"),
        ));
    }
    let url = g
        .url
        .clone()
        .or_else(|| env("HOOKRELAY_URL"))
        .or_else(|| profile.map(|p| p.url.clone()))
        .unwrap_or_else(|| DEFAULT_URL.into());
    let url = url.trim_end_matches('/').to_string();
    check_url(&url)?;
    let token = if let Some(path) = &g.token_file {
        Some((read_token_file(path)?, TokenFrom::File(path.clone())))
    } else if let Some(t) = env("HOOKRELAY_TOKEN") {
        Some((Token::new(t.trim().to_string()), TokenFrom::Environment))
    } else if let Some(p) = profile.filter(|p| p.url.trim_end_matches('/') == url) {
        Some((Token::new(p.token.clone()), TokenFrom::Profile(name)))
    } else if is_loopback(&url) {
        dev_token::mint_for_loopback()?.map(|(t, file)| (t, TokenFrom::DevVars(file)))
    } else {
        None
    };
    Ok(Target { url, token })
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// A token file's first non-empty text, trimmed.
pub fn read_token_file(path: &std::path::Path) -> Result<Token, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::usage(
            format!("cannot read --token-file {}: {e}", path.display()),
            "give a file that holds the token alone",
        )
    })?;
    let text = text.trim();
    if text.is_empty() {
        return Err(Failure::usage(
            format!("--token-file {} is empty", path.display()),
            "put the token in it, alone",
        ));
    }
    Ok(Token::new(text.to_string()))
}

/// A URL the CLI can call: http or https, with a host.
pub fn check_url(url: &str) -> Result<(), Failure> {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        _ => Err(Failure::usage(
            format!("{url:?} is not a relay URL"),
            "give the relay's origin, e.g. --url https://hookrelay.example.workers.dev or http://127.0.0.1:8787",
        )),
    }
}

/// Whether the URL's host is this machine: `localhost`, 127.0.0.0/8, `::1`.
pub fn is_loopback(url: &str) -> bool {
    let Ok(u) = url::Url::parse(url) else {
        return false;
    };
    match u.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

/// Refuses to carry a token over plain http to a host that is not loopback.
pub fn transport_allows(url: &str) -> Result<(), Failure> {
    let https = url::Url::parse(url).is_ok_and(|u| u.scheme() == "https");
    if https || is_loopback(url) {
        return Ok(());
    }
    Err(Failure::usage(
        format!("refusing to send a token over plain http:// to {url}: anyone on the way could read it"),
        "use the relay's https:// URL (a loopback address such as http://127.0.0.1:8787 may stay http)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_localhost_127_0_0_0_slash_8_and_the_ipv6_one() {
        let table = [
            ("http://127.0.0.1:8787", true),
            ("http://127.1.2.3", true),
            ("http://localhost:8787/", true),
            ("http://LOCALHOST", true),
            ("http://[::1]:8787", true),
            ("http://0.0.0.0:8787", false),
            ("http://10.0.0.1", false),
            ("http://localhost.example.com", false),
            ("http://127.0.0.1.nip.io", false),
            ("not a url", false),
        ];
        for (url, want) in table {
            assert_eq!(is_loopback(url), want, "{url}");
        }
    }

    #[test]
    fn a_token_travels_over_https_or_to_loopback_only() {
        assert!(transport_allows("https://relay.example.com").is_ok());
        assert!(transport_allows("http://[::1]:8787").is_ok());
        let refused = transport_allows("http://relay.example.com").unwrap_err();
        assert_eq!(refused.exit_code(), 2);
        assert!(refused.next.contains("https://"), "{}", refused.next);
        assert!(check_url("ftp://x").is_err() && check_url("http://").is_err());
        assert!(check_url("http://127.0.0.1:8787").is_ok());
        assert_eq!(
            format!("{:?}", Token::new("secret-token".into())),
            "Token(…)"
        );
    }
}
