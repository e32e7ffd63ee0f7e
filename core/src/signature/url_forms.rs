//! The forms of the signed URL a scheme accepts ([`UrlForms`]): the URL
//! as given, and for Twilio also with and without its port.

use super::scheme::UrlForms;
use std::borrow::Cow;

/// The URLs a signature may cover, the URL as given first. For
/// [`UrlForms::PortOrNot`], the other is the URL without its port when it
/// has one (any port, as Twilio's libraries drop any), else the URL with
/// its scheme's default port. A URL that is not `http` or `https` is taken
/// as given.
pub fn of(url: &str, forms: UrlForms) -> Vec<Cow<'_, str>> {
    let mut out = vec![Cow::Borrowed(url)];
    if forms == UrlForms::PortOrNot {
        if let Some(other) = other_port_form(url) {
            out.push(Cow::Owned(other));
        }
    }
    out
}

/// The URL with its port removed, or with the default one added.
fn other_port_form(url: &str) -> Option<String> {
    let starts = |prefix: &str| {
        url.get(..prefix.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
    };
    let (host_at, default) = if starts("https://") {
        (8, ":443")
    } else if starts("http://") {
        (7, ":80")
    } else {
        return None;
    };
    // Byte scans: every byte searched for is ASCII, so each index found
    // is a character boundary.
    let bytes = url.as_bytes();
    let end = host_at
        + bytes[host_at..]
            .iter()
            .position(|b| matches!(b, b'/' | b'?' | b'#'))
            .unwrap_or(url.len() - host_at);
    // The host starts after any user info; a colon inside an IPv6
    // literal's brackets is not the port's.
    let host = host_at
        + bytes[host_at..end]
            .iter()
            .rposition(|b| matches!(b, b'@' | b']'))
            .map_or(0, |i| i + 1);
    let (cut, insert) = match bytes[host..end].iter().position(|&b| b == b':') {
        Some(colon) => (host + colon, ""),
        None => (end, default),
    };
    let mut out = String::with_capacity(url.len() + insert.len());
    out.push_str(&url[..cut]);
    out.push_str(insert);
    out.push_str(&url[end..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twilio_accepts_the_url_with_and_without_its_port() {
        let table: [(&str, &[&str]); 11] = [
            ("https://x.io/t?a=1", &["https://x.io:443/t?a=1"]),
            ("https://x.io:443/t?a=1", &["https://x.io/t?a=1"]),
            ("http://x.io/t", &["http://x.io:80/t"]),
            ("HTTPS://x.io", &["HTTPS://x.io:443"]),
            ("https://x.io:8443/t", &["https://x.io/t"]),
            ("https://u:p@x.io?q=a:b", &["https://u:p@x.io:443?q=a:b"]),
            ("https://[::1]:443/t", &["https://[::1]/t"]),
            ("https://[::1]/t", &["https://[::1]:443/t"]),
            ("https://u@[::1]/t", &["https://u@[::1]:443/t"]),
            ("relative/t:1", &[]),
            ("ftp://x.io/t", &[]),
        ];
        for (url, others) in table {
            let got = of(url, UrlForms::PortOrNot);
            let want: Vec<&str> = std::iter::once(url).chain(others.iter().copied()).collect();
            assert_eq!(got, want, "{url}");
        }
    }

    #[test]
    fn other_schemes_sign_the_url_exactly() {
        assert_eq!(of("https://x.io/t", UrlForms::Exact), ["https://x.io/t"]);
    }
}
