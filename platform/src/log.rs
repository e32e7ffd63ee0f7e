//! Structured logs: one JSON object per line, with a level, a component and
//! an event name. Callers pass ids and codes only: never a payload, never a
//! secret.

use hookrelay_core::metrics::Component;
use serde_json::{Map, Value};

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

/// Builds the JSON object of a log line.
pub fn line(level: Level, component: Component, event: &str, fields: Value) -> String {
    let mut obj = Map::new();
    obj.insert("level".into(), level.as_str().into());
    obj.insert("component".into(), component.as_str().into());
    obj.insert("event".into(), event.into());
    if let Value::Object(extra) = fields {
        obj.extend(extra);
    }
    Value::Object(obj).to_string()
}

/// Writes a line with an optional human prefix (QuestKit's `[consumer] ingest failed`).
pub fn emit(level: Level, prefix: Option<&str>, component: Component, event: &str, fields: Value) {
    let body = line(level, component, event, fields);
    let text = match prefix {
        Some(p) => format!("{p} {body}"),
        None => body,
    };
    match level {
        Level::Info => worker::console_log!("{text}"),
        Level::Warn => worker::console_warn!("{text}"),
        Level::Error => worker::console_error!("{text}"),
    }
}

/// Shorthand for an info line.
pub fn info(component: Component, event: &str, fields: Value) {
    emit(Level::Info, None, component, event, fields);
}

/// Shorthand for a warn line.
pub fn warn(component: Component, event: &str, fields: Value) {
    emit(Level::Warn, None, component, event, fields);
}

/// Shorthand for an error line.
pub fn error(component: Component, event: &str, fields: Value) {
    emit(Level::Error, None, component, event, fields);
}
