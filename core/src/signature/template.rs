//! The signing-string template: literal text with `{body}`, `{timestamp}`,
//! `{id}`, `{url}`, `{url_decoded}` and `{method}`.
//!
//! A template is parsed once at startup to check it (a recipe's error then
//! names the field), and again per request into pieces that borrow from
//! it: parsing a few dozen bytes costs less than keeping a second model.

use super::SignatureError;
use std::borrow::Cow;

/// One piece of a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'t> {
    /// Literal text.
    Lit(&'t str),
    /// The raw body.
    Body,
    /// The timestamp's text.
    Timestamp,
    /// The delivery id.
    Id,
    /// The URL the provider signs.
    Url,
    /// The URL with HubSpot's escapes decoded.
    UrlDecoded,
    /// The request's method.
    Method,
}

/// Parses a template. The error says what is wrong in words fit for a
/// configuration error.
pub fn parse(template: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        match rest.find(['{', '}']) {
            None => {
                out.push(Piece::Lit(rest));
                break;
            }
            Some(i) if rest.as_bytes()[i] == b'}' => {
                return Err(format!(
                    "a '}}' at byte {} closes nothing; placeholders are {PLACEHOLDERS}",
                    template.len() - rest.len() + i
                ))
            }
            Some(i) => {
                if i > 0 {
                    out.push(Piece::Lit(&rest[..i]));
                }
                let after = &rest[i + 1..];
                let Some(end) = after.find('}') else {
                    return Err(format!(
                        "a '{{' is never closed; placeholders are {PLACEHOLDERS}"
                    ));
                };
                out.push(placeholder(&after[..end])?);
                rest = &after[end + 1..];
            }
        }
    }
    if !out.contains(&Piece::Body) {
        return Err(
            "must contain {body}: a signature that does not cover the body proves nothing about it"
                .into(),
        );
    }
    Ok(out)
}

const PLACEHOLDERS: &str = "{body}, {timestamp}, {id}, {url}, {url_decoded} and {method}";

fn placeholder(name: &str) -> Result<Piece<'static>, String> {
    Ok(match name {
        "body" => Piece::Body,
        "timestamp" => Piece::Timestamp,
        "id" => Piece::Id,
        "url" => Piece::Url,
        "url_decoded" => Piece::UrlDecoded,
        "method" => Piece::Method,
        other => {
            return Err(format!(
                "unknown placeholder {{{other}}}; expected one of {PLACEHOLDERS}"
            ))
        }
    })
}

/// The values a template is filled with.
pub struct Fill<'a> {
    /// The raw body.
    pub body: &'a [u8],
    /// The timestamp's text, if the scheme has one.
    pub timestamp: Option<&'a str>,
    /// The delivery id, if the scheme has one.
    pub id: Option<&'a str>,
    /// The URL the provider signs.
    pub url: &'a str,
    /// The request's method.
    pub method: &'a str,
}

/// The signed text as pieces, the body borrowed (a 1 MB body is never
/// copied). `None` names the placeholder that has no value.
pub fn render<'a>(
    pieces: &[Piece<'a>],
    fill: &Fill<'a>,
) -> Result<Vec<Cow<'a, [u8]>>, Piece<'static>> {
    pieces
        .iter()
        .map(|p| {
            Ok(match *p {
                Piece::Lit(t) => Cow::Borrowed(t.as_bytes()),
                Piece::Body => Cow::Borrowed(fill.body),
                Piece::Timestamp => {
                    Cow::Borrowed(fill.timestamp.ok_or(Piece::Timestamp)?.as_bytes())
                }
                Piece::Id => Cow::Borrowed(fill.id.ok_or(Piece::Id)?.as_bytes()),
                Piece::Url => Cow::Borrowed(fill.url.as_bytes()),
                Piece::UrlDecoded => Cow::Owned(hubspot_decode(fill.url).into_bytes()),
                Piece::Method => Cow::Borrowed(fill.method.as_bytes()),
            })
        })
        .collect()
}

/// HubSpot's v3 signature decodes these escapes in the URL, and only these
/// (HubSpot's "Validate requests" page lists them).
const HUBSPOT_ESCAPES: [(&str, char); 12] = [
    ("%3A", ':'),
    ("%2F", '/'),
    ("%3F", '?'),
    ("%40", '@'),
    ("%21", '!'),
    ("%24", '$'),
    ("%27", '\''),
    ("%28", '('),
    ("%29", ')'),
    ("%2A", '*'),
    ("%2C", ','),
    ("%3B", ';'),
];

/// The URL with HubSpot's escapes decoded (either case of hex digit).
pub fn hubspot_decode(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let code = rest.get(i..i + 3).map(str::to_ascii_uppercase);
        match code.and_then(|c| HUBSPOT_ESCAPES.iter().find(|(e, _)| *e == c)) {
            Some((_, ch)) => {
                out.push(*ch);
                rest = &rest[i + 3..];
            }
            None => {
                out.push('%');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Twilio's signed text, once per form of the URL (`urls`, each with the
/// same query): the URL, then each form field sorted by name (then value,
/// a value repeated under one name once) as name and value. A body that
/// is not a form is signed through the URL's `bodySHA256`, which must be
/// the hex SHA-256 of the body. The form is read, or the body hashed, once
/// for all the URLs.
pub fn twilio<'a>(
    fill: &Fill<'a>,
    urls: &'a [Cow<'a, str>],
    form: bool,
) -> Result<Vec<Vec<Cow<'a, [u8]>>>, SignatureError> {
    let fields = if form {
        let mut fields =
            crate::support::form::decode(fill.body).map_err(|e| SignatureError::Malformed {
                header: TWILIO_HEADER.into(),
                reason: format!("the signed form cannot be read: {}", e.0),
            })?;
        sort_fields(&mut fields);
        // As twilio's own validateRequest: a repeated field's equal values
        // count once.
        fields.dedup();
        let mut out = Vec::new();
        for (name, value) in fields {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(value.as_bytes());
        }
        Some(out)
    } else {
        check_body_sha256(fill)?;
        None
    };
    let mut out = Vec::with_capacity(urls.len());
    for url in urls {
        let mut message = vec![Cow::Borrowed(url.as_bytes())];
        if let Some(fields) = &fields {
            message.push(Cow::Owned(fields.clone()));
        }
        out.push(message);
    }
    Ok(out)
}

/// A JSON body's hex SHA-256 must be the `bodySHA256` of the URL's query.
fn check_body_sha256(fill: &Fill<'_>) -> Result<(), SignatureError> {
    let query = fill.url.split_once('?').map_or("", |(_, q)| q);
    let claimed = crate::support::form::decode(query.as_bytes())
        .ok()
        .and_then(|fields| fields.into_iter().find(|(n, _)| n == "bodySHA256"))
        .map(|(_, v)| v)
        .ok_or_else(|| SignatureError::Malformed {
            header: TWILIO_HEADER.into(),
            reason: "a body that is not a form must be signed through bodySHA256 in the URL, and the URL has none".into(),
        })?;
    use sha2::Digest;
    let actual = hex::encode(sha2::Sha256::digest(fill.body));
    if !super::mac::ct_eq(claimed.to_ascii_lowercase().as_bytes(), actual.as_bytes()) {
        return Err(SignatureError::Mismatch);
    }
    Ok(())
}

const TWILIO_HEADER: &str = "x-twilio-signature";

/// Sorts Twilio's fields by name, then value. A heapsort: O(n log n) on a
/// hostile form of many fields (sorted before its MAC is checked), in a
/// fraction of the code of std's sort (about 3 KB of wasm for this one
/// element type; `small_sort`'s insertion sort is quadratic, unfit for
/// input a sender controls).
fn sort_fields(v: &mut [(String, String)]) {
    let n = v.len();
    for start in (0..n / 2).rev() {
        sift_down(v, start, n);
    }
    for end in (1..n).rev() {
        v.swap(0, end);
        sift_down(v, 0, end);
    }
}

fn sift_down(v: &mut [(String, String)], mut root: usize, end: usize) {
    loop {
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && v[child] < v[child + 1] {
            child += 1;
        }
        if v[root] >= v[child] {
            return;
        }
        v.swap(root, child);
        root = child;
    }
}

/// Whether a template uses a placeholder.
pub fn uses(pieces: &[Piece<'_>], piece: Piece<'static>) -> bool {
    pieces.contains(&piece)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_parses_into_literal_text_and_placeholders() {
        use Piece::*;
        let table: [(&str, Vec<Piece>); 4] = [
            ("{body}", vec![Body]),
            (
                "v0:{timestamp}:{body}",
                vec![Lit("v0:"), Timestamp, Lit(":"), Body],
            ),
            (
                "{id}.{timestamp}.{body}",
                vec![Id, Lit("."), Timestamp, Lit("."), Body],
            ),
            (
                "{method}{url_decoded}{body}{timestamp}",
                vec![Method, UrlDecoded, Body, Timestamp],
            ),
        ];
        for (text, want) in table {
            assert_eq!(parse(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn a_bad_template_says_what_is_wrong() {
        let table = [
            ("{timestamp}", "must contain {body}"),
            ("{bdoy}", "unknown placeholder {bdoy}"),
            ("{body", "never closed"),
            ("body}", "closes nothing"),
            ("", "must contain {body}"),
        ];
        for (text, fragment) in table {
            let err = parse(text).unwrap_err();
            assert!(err.contains(fragment), "{text}: {err}");
        }
    }

    #[test]
    fn twilio_signs_the_url_then_sorted_fields_a_repeated_value_once() {
        let fill = Fill {
            body: b"To=%2B1&b=2&a=1&a=1&a=0",
            timestamp: None,
            id: None,
            url: "https://x.io/t?q=1",
            method: "POST",
        };
        let urls = [
            Cow::Borrowed(fill.url),
            Cow::Borrowed("https://x.io:443/t?q=1"),
        ];
        let got: Vec<Vec<u8>> = twilio(&fill, &urls, true)
            .unwrap()
            .iter()
            .map(|m| m.concat())
            .collect();
        assert_eq!(
            got,
            [
                &b"https://x.io/t?q=1To+1a0a1b2"[..],
                b"https://x.io:443/t?q=1To+1a0a1b2"
            ]
        );
    }

    #[test]
    fn twilio_fields_sort_as_std_sorts_them() {
        let mut seed = 7u64;
        for len in 0..40 {
            let mut fields: Vec<(String, String)> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    let name =
                        ["To", "From", "Body", "A", "a", "Digits"][(seed >> 33) as usize % 6];
                    (name.to_string(), format!("{}", (seed >> 40) % 5))
                })
                .collect();
            let mut want = fields.clone();
            want.sort();
            sort_fields(&mut fields);
            assert_eq!(fields, want, "{len} fields");
        }
    }

    #[test]
    fn hubspot_decodes_only_its_listed_escapes() {
        assert_eq!(
            hubspot_decode("https://x.io/a%3Fb%3Dc%2c%21%20%zz%"),
            "https://x.io/a?b%3Dc,!%20%zz%"
        );
    }

    #[test]
    fn rendering_borrows_the_body_and_refuses_a_missing_value() {
        let pieces = parse("{timestamp}.{body}").unwrap();
        let fill = Fill {
            body: b"{}",
            timestamp: Some("17"),
            id: None,
            url: "",
            method: "POST",
        };
        let out = render(&pieces, &fill).unwrap();
        assert_eq!(out.concat(), b"17.{}");
        assert!(matches!(out[2], Cow::Borrowed(_)));
        let no_id = render(&parse("{id}{body}").unwrap(), &fill);
        assert_eq!(no_id, Err(Piece::Id));
    }
}
