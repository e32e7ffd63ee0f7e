//! The form decoder: `application/x-www-form-urlencoded` bodies (Slack's
//! commands and interactivity, Twilio) as their fields.
//!
//! Filters and JSON Pointers see a form as an object of its fields: a
//! repeated field is the list of its values, and every value is a string
//! (`payload=` stays a string even when it holds JSON).

use serde_json::{Map, Value};

/// A body that is not a form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormError(pub String);

/// Whether a `Content-Type` says the body is a form (parameters such as
/// `; charset=utf-8` and the case are ignored).
pub fn is_form(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|ct| {
        ct.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .eq_ignore_ascii_case("application/x-www-form-urlencoded")
    })
}

/// The fields in order, names and values decoded (`+` is a space).
pub fn decode(body: &[u8]) -> Result<Vec<(String, String)>, FormError> {
    let text = std::str::from_utf8(body)
        .map_err(|_| FormError("the form body is not UTF-8 text".into()))?;
    text.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            Ok((unescape(name)?, unescape(value)?))
        })
        .collect()
}

/// The fields as one object: a repeated field becomes the list of its
/// values, in order.
pub fn to_object(fields: Vec<(String, String)>) -> Value {
    let mut map = Map::new();
    for (name, value) in fields {
        match map.get_mut(&name) {
            None => {
                map.insert(name, Value::String(value));
            }
            Some(Value::Array(list)) => list.push(Value::String(value)),
            Some(first) => {
                let first = first.take();
                map.insert(name, Value::Array(vec![first, Value::String(value)]));
            }
        }
    }
    Value::Object(map)
}

fn unescape(raw: &str) -> Result<String, FormError> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(hex_pair)
                    .ok_or_else(|| {
                        FormError(format!(
                            "the form body has a '%' not followed by two hex digits at byte {i} of a field"
                        ))
                    })?;
                out.push(hex);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out)
        .map_err(|_| FormError("a form field decodes to bytes that are not UTF-8".into()))
}

/// Two hex digits as the byte they spell. Digits only: `u8::from_str_radix`
/// would also take a sign, so `%+F` would decode as 0x0F.
pub fn hex_pair(pair: &[u8]) -> Option<u8> {
    let digit = |b: &u8| char::from(*b).to_digit(16);
    match pair {
        [hi, lo] => Some((digit(hi)? * 16 + digit(lo)?) as u8),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_form_content_type_is_recognized_whatever_its_case_and_parameters() {
        let table = [
            (Some("application/x-www-form-urlencoded"), true),
            (
                Some("Application/X-WWW-Form-Urlencoded; charset=utf-8"),
                true,
            ),
            (Some("application/json"), false),
            (Some("text/plain"), false),
            (Some("multipart/form-data"), false),
            (None, false),
        ];
        for (ct, want) in table {
            assert_eq!(is_form(ct), want, "{ct:?}");
        }
    }

    #[test]
    fn a_form_decodes_into_an_object_of_string_fields() {
        let table: [(&str, Value); 6] = [
            ("a=1&b=two+words", json!({"a": "1", "b": "two words"})),
            ("tag=x&tag=y&tag=z", json!({"tag": ["x", "y", "z"]})),
            (
                "payload=%7B%22type%22%3A1%7D",
                json!({"payload": "{\"type\":1}"}),
            ),
            ("flag&empty=&=v", json!({"flag": "", "empty": "", "": "v"})),
            ("caf%C3%A9=%E2%9C%93", json!({"café": "✓"})),
            ("", json!({})),
        ];
        for (body, want) in table {
            let fields = decode(body.as_bytes()).unwrap_or_else(|e| panic!("{body}: {e:?}"));
            assert_eq!(to_object(fields), want, "{body}");
        }
    }

    #[test]
    fn a_body_that_is_not_a_form_says_why() {
        let table: [(&[u8], &str); 6] = [
            (b"a=%zz", "not followed by two hex digits"),
            (b"a=%+F", "not followed by two hex digits"),
            (b"a=%-1", "not followed by two hex digits"),
            (b"a=%4", "not followed by two hex digits"),
            (b"a=%FF", "not UTF-8"),
            (&[b'a', b'=', 0xff], "not UTF-8"),
        ];
        for (body, fragment) in table {
            let err = decode(body).unwrap_err();
            assert!(err.0.contains(fragment), "{body:?}: {err:?}");
        }
    }
}
