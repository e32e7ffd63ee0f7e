//! Structured logs: one JSON object per line, with a level, a component and
//! an event name, then the caller's fields in the order given. Callers pass
//! ids and codes only: never a payload, never a secret.
//!
//! The fields are a slice of [`Field`]s written straight to text, not a
//! `serde_json::Value` tree: every `json!` at a call site expands into map
//! inserts and allocations, and with some sixty log sites that code was a
//! measurable share of the wasm.

use hookrelay_core::metrics::{Component, MetricName};
use hookrelay_core::state;
use hookrelay_core::state::error_code::ErrorCode;

/// Severity of a log line.
#[derive(Debug, Clone, Copy)]
pub enum Level {
    /// Routine progress.
    Info,
    /// Something failed and was handled (retried, dead-lettered).
    Warn,
    /// Something failed and needs a human.
    Error,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// One field's value. It owns nothing, so the arrays that `fields!` builds
/// at some fifty log sites need no drop code.
#[derive(Clone, Copy)]
pub enum Field<'a> {
    /// A borrowed string.
    Str(&'a str),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    Uint(u64),
    /// A boolean.
    Bool(bool),
    /// JSON `null` (an absent optional value).
    Null,
    /// A nested object.
    Object(&'a [(&'a str, Field<'a>)]),
    /// An array.
    List(&'a dyn FieldList),
}

/// The items of a logged list, read one at a time.
pub trait FieldList {
    /// The item at `i`, if there is one.
    fn field_at(&self, i: usize) -> Option<Field<'_>>;
}

impl<T: ToField> FieldList for Vec<T> {
    fn field_at(&self, i: usize) -> Option<Field<'_>> {
        self.get(i).map(ToField::to_field)
    }
}

/// The fields of a log line, in `json!`-like syntax:
/// `fields!{"id": event_id, "err": error_message(&e)}`. Each value is taken
/// by reference, as `json!` takes it.
#[macro_export]
macro_rules! fields {
    ($($key:literal : $value:expr),* $(,)?) => {
        &[$(($key, $crate::log::ToField::to_field(&$value))),*]
    };
}
pub use crate::fields;

/// A value a log field can hold.
pub trait ToField {
    /// The field, borrowing from `self`.
    fn to_field(&self) -> Field<'_>;
}

impl ToField for str {
    fn to_field(&self) -> Field<'_> {
        Field::Str(self)
    }
}

impl ToField for String {
    fn to_field(&self) -> Field<'_> {
        Field::Str(self)
    }
}

impl ToField for bool {
    fn to_field(&self) -> Field<'_> {
        Field::Bool(*self)
    }
}

impl<'a, const N: usize> ToField for [(&'a str, Field<'a>); N] {
    fn to_field(&self) -> Field<'_> {
        Field::Object(self)
    }
}

impl<T: ToField> ToField for Vec<T> {
    fn to_field(&self) -> Field<'_> {
        Field::List(self)
    }
}

impl<T: ToField + ?Sized> ToField for &T {
    fn to_field(&self) -> Field<'_> {
        (**self).to_field()
    }
}

impl<T: ToField> ToField for Option<T> {
    fn to_field(&self) -> Field<'_> {
        self.as_ref().map_or(Field::Null, ToField::to_field)
    }
}

macro_rules! integer_fields {
    ($variant:ident as $wide:ty: $($t:ty),*) => {
        $(impl ToField for $t {
            fn to_field(&self) -> Field<'_> {
                Field::$variant(*self as $wide)
            }
        })*
    };
}
integer_fields!(Int as i64: i64, i32);
integer_fields!(Uint as u64: u64, u32, u16, usize);

/// The core's named states log as their stored names.
macro_rules! named_fields {
    ($($t:ty),*) => {
        $(impl ToField for $t {
            fn to_field(&self) -> Field<'_> {
                Field::Str(self.as_str())
            }
        })*
    };
}
named_fields!(
    ErrorCode,
    hookrelay_core::state::error_code::FailureClass,
    hookrelay_core::dead_letter::envelope::DeadLetterKind,
    Component,
    MetricName,
    state::AuditAction,
    state::DeliverySummary,
    state::DownstreamResult,
    state::EntryStatus,
    state::EventStep,
    state::IngestKind,
    state::JobAction,
    state::JobEntryOutcome,
    state::JobStatus,
    state::ReplayOutcome,
    state::StoreOutcome
);

/// Appends `s` as a JSON string.
fn push_json_str(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                out.push_str("\\u00");
                out.push(HEX[(c as usize) >> 4] as char);
                out.push(HEX[(c as usize) & 0xf] as char);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn push_field(out: &mut String, field: &Field<'_>) {
    match field {
        Field::Str(s) => push_json_str(out, s),
        Field::Int(n) => out.push_str(&n.to_string()),
        Field::Uint(n) => out.push_str(&n.to_string()),
        Field::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Field::Null => out.push_str("null"),
        Field::Object(fields) => {
            out.push('{');
            push_members(out, fields, false);
            out.push('}');
        }
        Field::List(items) => {
            out.push('[');
            let mut i = 0;
            while let Some(item) = items.field_at(i) {
                if i > 0 {
                    out.push(',');
                }
                push_field(out, &item);
                i += 1;
            }
            out.push(']');
        }
    }
}

fn push_members(out: &mut String, fields: &[(&str, Field<'_>)], mut comma: bool) {
    for (key, value) in fields {
        if comma {
            out.push(',');
        }
        comma = true;
        push_json_str(out, key);
        out.push(':');
        push_field(out, value);
    }
}

/// Builds the JSON object of a log line.
pub fn line(
    level: Level,
    component: Component,
    event: &str,
    fields: &[(&str, Field<'_>)],
) -> String {
    let mut out = String::with_capacity(96);
    out.push_str("{\"level\":\"");
    out.push_str(level.as_str());
    out.push_str("\",\"component\":\"");
    out.push_str(component.as_str());
    out.push_str("\",\"event\":");
    push_json_str(&mut out, event);
    push_members(&mut out, fields, true);
    out.push('}');
    out
}

/// Writes a line with an optional human prefix (QuestKit's `[consumer] ingest failed`).
pub fn emit(
    level: Level,
    prefix: Option<&str>,
    component: Component,
    event: &str,
    fields: &[(&str, Field<'_>)],
) {
    let mut text = line(level, component, event, fields);
    if let Some(p) = prefix {
        text.insert(0, ' ');
        text.insert_str(0, p);
    }
    let text = wasm_bindgen::JsValue::from_str(&text);
    use worker::web_sys::console;
    match level {
        Level::Info => console::log_1(&text),
        Level::Warn => console::warn_1(&text),
        Level::Error => console::error_1(&text),
    }
}

/// Shorthand for an info line.
pub fn info(component: Component, event: &str, fields: &[(&str, Field<'_>)]) {
    emit(Level::Info, None, component, event, fields);
}

/// Shorthand for a warn line.
pub fn warn(component: Component, event: &str, fields: &[(&str, Field<'_>)]) {
    emit(Level::Warn, None, component, event, fields);
}

/// Shorthand for an error line.
pub fn error(component: Component, event: &str, fields: &[(&str, Field<'_>)]) {
    emit(Level::Error, None, component, event, fields);
}

/// A delivery that failed and what happens next (`retry`, with its delay,
/// or `dead_letter`): the WARN line `[consumer] delivery failed` that the
/// first attempts and the `deliveries` consumer both write. `message` is
/// the queue message id and the platform's attempts, when a message
/// carried it.
pub fn delivery_failed(
    component: Component,
    (id, destination): (&str, &str),
    message: Option<(&str, u32)>,
    failure: &hookrelay_core::state::error_code::Failure,
    (next, delay_s): (&str, Option<u32>),
) {
    emit(
        Level::Warn,
        Some("[consumer] delivery failed"),
        component,
        "delivery_failed",
        fields! {
            "id": id,
            "destination": destination,
            "queue_message_id": message.map(|m| m.0),
            "attempts": message.map(|m| m.1),
            "err": fields!{"code": failure.code, "class": failure.class(), "message": failure.message},
            "next": next,
            "delay_s": delay_s,
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn a_line_is_one_json_object_with_fields_in_order() {
        let err = String::from("D1 said \"no\"\n\u{1}");
        let text = line(
            Level::Warn,
            Component::Relay,
            "ingest_failed",
            fields! {
                "id": "evt_1",
                "attempts": 3u32,
                "delay_s": Option::<u32>::None,
                "ok": false,
                "err": fields!{"code": ErrorCode::Timeout, "message": err},
                "delta": -2i64,
            },
        );
        assert!(text.starts_with(
            r#"{"level":"warn","component":"relay","event":"ingest_failed","id":"evt_1","attempts":3,"#
        ));
        let v: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(v["err"]["message"], err.as_str());
        assert_eq!(v["err"]["code"], "TIMEOUT");
        assert_eq!(v["delay_s"], Value::Null);
        assert_eq!(v["delta"], -2);
        assert_eq!(v["ok"], false);
    }

    #[test]
    fn no_fields_is_still_an_object() {
        let text = line(Level::Info, Component::Relay, "x", fields! {});
        let v: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(v["event"], "x");
    }
}
