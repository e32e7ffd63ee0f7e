//! The opaque keyset cursor: `c1.` and base64url of a small JSON object.

use super::QueryError;
use crate::support::base64::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::Value;

/// Version tag at the start of every cursor, so the encoding can change
/// later without old cursors being misread.
pub const CURSOR_PREFIX: &str = "c1.";
/// The longest cursor accepted; bounds decoding work on caller input.
pub const MAX_CURSOR_LEN: usize = 4096;

/// Opaque keyset cursor over (created_at_ms DESC, id DESC): the next page
/// holds rows strictly after this position.
///
/// It is not signed. It only names a position in a list the caller may read
/// anyway, so a forged one can do no more than an ordinary query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// `created_at` of the last row returned, unix ms.
    pub at_ms: i64,
    /// `id` of the last row returned.
    pub id: String,
}

/// The JSON inside a cursor. Unknown fields are refused so a cursor from a
/// later encoding is not half-read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CursorWire {
    t: i64,
    i: String,
}

/// Encodes a cursor: `c1.` and base64url (no padding) of `{"t":…,"i":…}`.
pub fn encode_cursor(c: &Cursor) -> String {
    // Written by hand so field order is fixed whatever serde_json features
    // another crate enables; `Value`'s Display escapes the id and cannot fail.
    let json = format!(
        "{{\"t\":{},\"i\":{}}}",
        c.at_ms,
        Value::String(c.id.clone())
    );
    format!("{CURSOR_PREFIX}{}", URL_SAFE_NO_PAD.encode(json))
}

/// Decodes a cursor made by `encode_cursor`. Anything else is refused under
/// param `cursor`. An empty string is refused too; see `parse_cursor` for
/// the query-parameter form where empty means absent.
pub fn decode_cursor(raw: &str) -> Result<Cursor, QueryError> {
    let refuse = || {
        QueryError::new(
            "cursor",
            "is not a cursor this API issued; pass the cursor from the previous page unchanged, or omit it for the first page",
        )
    };
    if raw.len() > MAX_CURSOR_LEN {
        return Err(refuse());
    }
    let body = raw.strip_prefix(CURSOR_PREFIX).ok_or_else(refuse)?;
    let bytes = URL_SAFE_NO_PAD.decode(body).map_err(|_| refuse())?;
    // serde would also read a derived struct from a JSON array; only the
    // object form is ever issued, so only it is accepted.
    if bytes.first() != Some(&b'{') {
        return Err(refuse());
    }
    // Through `&str` (see `jwt::decode_object`): one copy of the parser.
    let text = std::str::from_utf8(&bytes).map_err(|_| refuse())?;
    let wire: CursorWire = serde_json::from_str(text).map_err(|_| refuse())?;
    Ok(Cursor {
        at_ms: wire.t,
        id: wire.i,
    })
}

/// The `cursor` query parameter: absent or empty is the first page.
pub fn parse_cursor(raw: Option<&str>) -> Result<Option<Cursor>, QueryError> {
    match raw {
        None | Some("") => Ok(None),
        Some(raw) => decode_cursor(raw).map(Some),
    }
}

#[cfg(test)]
mod tests;
