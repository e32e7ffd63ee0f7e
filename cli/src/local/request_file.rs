//! A captured request as raw HTTP/1.1 text: the request line, the headers,
//! a blank line, then the body byte-exact. Lines end in CRLF or LF (a
//! capture saved by an editor, or `nc -l`), the body is never touched, and
//! a `Content-Length` header, when present, says where the body ends (so
//! a newline an editor added after it is not signed).

/// A parsed capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRequest {
    /// The method, e.g. `POST`.
    pub method: String,
    /// The request target: path and query (`/webhooks/acme?x=1`).
    pub target: String,
    /// The headers in order, names lower-case, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body, byte-exact.
    pub body: Vec<u8>,
}

impl RawRequest {
    /// The value of header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The URL the relay received it at: `https://` + `Host` + the target
    /// (an absolute target is taken as it is).
    pub fn received_url(&self) -> Result<String, String> {
        if self.target.starts_with("http://") || self.target.starts_with("https://") {
            return Ok(self.target.clone());
        }
        let host = self
            .header("host")
            .ok_or("the request has no Host header, so its URL is unknown; add `Host: <the relay's host>` to the capture, or set the source's `url`")?;
        Ok(format!("https://{host}{}", self.target))
    }
}

/// Parses a capture; the error says which part is wrong.
pub fn parse(raw: &[u8]) -> Result<RawRequest, String> {
    let (head, body) = split_head(raw)?;
    let head = std::str::from_utf8(head)
        .map_err(|_| "the request line and headers are not text (UTF-8)".to_string())?;
    let mut lines = head.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let first = lines.next().unwrap_or("");
    let mut parts = first.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(format!(
            "the first line {first:?} is not a request line such as `POST /webhooks/acme HTTP/1.1`"
        ));
    };
    if parts.next().is_some_and(|v| !v.starts_with("HTTP/")) || parts.next().is_some() {
        return Err(format!(
            "the first line {first:?} is not a request line such as `POST /webhooks/acme HTTP/1.1`"
        ));
    }
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .filter(|(n, _)| !n.is_empty() && !n.contains(char::is_whitespace))
            .ok_or_else(|| format!("the header line {line:?} is not `Name: value`"))?;
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    let mut req = RawRequest {
        method: method.to_string(),
        target: target.to_string(),
        headers,
        body: body.to_vec(),
    };
    if let Some(len) = req.header("content-length") {
        let len: usize = len
            .parse()
            .map_err(|_| format!("Content-Length {len:?} is not a number"))?;
        if len > req.body.len() {
            return Err(format!("Content-Length says {len} bytes but the body after the blank line has {}; the capture is cut short", req.body.len()));
        }
        req.body.truncate(len);
    }
    Ok(req)
}

/// The head (request line and headers) and the body: split at the first
/// empty line, `\r\n\r\n` or `\n\n`, whichever comes first.
fn split_head(raw: &[u8]) -> Result<(&[u8], &[u8]), String> {
    let crlf = find(raw, b"\r\n\r\n").map(|i| (i, 4));
    let lf = find(raw, b"\n\n").map(|i| (i, 2));
    let (at, len) = match (crlf, lf) {
        (Some(a), Some(b)) => {
            if a.0 <= b.0 {
                a
            } else {
                b
            }
        }
        (Some(a), None) => a,
        (None, Some(b)) => b,
        (None, None) => {
            return Err("no blank line after the headers: a capture is the request line, the headers, a blank line, then the body".into())
        }
    };
    Ok((&raw[..at], &raw[at + len..]))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_and_lf_captures_read_alike_and_the_body_stays_byte_exact() {
        let body = "{\"a\":1}\r\n\n  ";
        for sep in ["\r\n", "\n"] {
            let raw = format!(
                "POST /webhooks/acme?x=1 HTTP/1.1{sep}Host: relay.example.com{sep}X-Sig:  abc {sep}{sep}{body}"
            );
            let req = parse(raw.as_bytes()).unwrap();
            assert_eq!(req.method, "POST");
            assert_eq!(req.target, "/webhooks/acme?x=1");
            assert_eq!(req.header("x-sig"), Some("abc"));
            assert_eq!(req.body, body.as_bytes(), "{sep:?}");
            assert_eq!(
                req.received_url().unwrap(),
                "https://relay.example.com/webhooks/acme?x=1"
            );
        }
    }

    #[test]
    fn content_length_ends_the_body_and_an_absolute_target_is_the_url() {
        let req = parse(b"POST https://h.example/w HTTP/1.1\nContent-Length: 2\n\n{}\n").unwrap();
        assert_eq!(req.body, b"{}");
        assert_eq!(req.received_url().unwrap(), "https://h.example/w");
        let empty = parse(b"POST /w HTTP/1.1\r\nHost: h\r\n\r\n").unwrap();
        assert!(empty.body.is_empty());
    }

    #[test]
    fn a_broken_capture_is_refused_saying_which_part() {
        let table: [(&[u8], &str); 6] = [
            (b"POST /w HTTP/1.1\nHost: h\n", "no blank line"),
            (b"hello\n\n{}", "not a request line"),
            (b"POST /w HTTP/1.1 extra\n\n{}", "not a request line"),
            (
                b"POST /w HTTP/1.1\nbad header\n\n{}",
                "is not `Name: value`",
            ),
            (b"POST /w HTTP/1.1\nContent-Length: 9\n\n{}", "cut short"),
            (b"POST /w HTTP/1.1\nContent-Length: x\n\n{}", "not a number"),
        ];
        for (raw, wanted) in table {
            let err = parse(raw).unwrap_err();
            assert!(err.contains(wanted), "{wanted}: {err}");
        }
        let no_host = parse(b"POST /w HTTP/1.1\n\n{}").unwrap();
        assert!(no_host.received_url().unwrap_err().contains("Host"));
    }
}
