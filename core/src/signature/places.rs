//! Reading a scheme's places: headers (with the scheme's alias spelling)
//! and JSON Pointers into the body's view (a form's view is the object of
//! its fields).

use super::scheme::{Place, Scheme};
use super::HeaderLookup;
use serde_json::Value;

/// The non-empty, trimmed value of a header, read under the scheme's alias
/// when the first spelling is absent.
pub fn header<'h>(
    scheme: &Scheme,
    headers: &'h (impl HeaderLookup + ?Sized),
    name: &str,
) -> Option<&'h str> {
    let present = |n: &str| headers.header(n).map(str::trim).filter(|v| !v.is_empty());
    present(name).or_else(|| {
        let (from, to) = scheme.alias.as_ref()?;
        let lower = name.to_ascii_lowercase();
        present(&format!("{to}{}", lower.strip_prefix(from.as_ref())?))
    })
}

/// The text at a JSON Pointer: a string as it is, a number as its JSON
/// text; anything else is absent.
pub fn json_text(view: &Value, pointer: &str) -> Option<String> {
    match view.pointer(pointer)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The text at a place: a header, or a JSON Pointer when the body's view
/// is given.
pub fn text(
    scheme: &Scheme,
    place: &Place,
    headers: &(impl HeaderLookup + ?Sized),
    view: Option<&Value>,
) -> Option<String> {
    match place {
        Place::Header(h) => header(scheme, headers, h).map(str::to_owned),
        Place::Json(p) => view.and_then(|v| json_text(v, p)),
        Place::Part => None,
    }
}

/// The delivery id: the scheme's place, else its fallback.
pub fn delivery_id(
    scheme: &Scheme,
    headers: &(impl HeaderLookup + ?Sized),
    view: Option<&Value>,
) -> Option<String> {
    [&scheme.id, &scheme.id_fallback]
        .into_iter()
        .flatten()
        .find_map(|p| text(scheme, p, headers, view))
}

/// Whether the scheme reads anything from the body (so the body must be
/// parsed into its view).
pub fn needs_view(scheme: &Scheme) -> bool {
    let json = |p: &Option<Place>| matches!(p, Some(Place::Json(_)));
    json(&scheme.id)
        || json(&scheme.id_fallback)
        || scheme
            .timestamp
            .as_ref()
            .is_some_and(|t| matches!(t.at, Place::Json(_)))
        || scheme.handshake.is_some()
}
