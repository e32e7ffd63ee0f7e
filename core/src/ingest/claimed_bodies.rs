//! The claim-checked bodies the ingest reads back from D1 before it routes
//! (DESIGN §3, "Routes see the whole event"). An event too large for a
//! queue message carries only a reference to its body
//! (`crate::receive::claim_check`); a route whose filter reads the body
//! must read all of it, or the event would be stored `filtered`. Only the
//! bodies some filter reads are read, for the whole batch in one round
//! trip; a batch with none reads nothing.

use crate::deliver::DeliveryConfig;
use crate::receive::queued_event::{EventBody, QueuedEvent};
use crate::state::error_code::{ErrorCode, Failure};
use crate::support::vec_map::VecMap;

/// The `payloads` keys to read before routing `events`: the claim-checked
/// bodies of the events whose source has a route filtering on the body,
/// each once.
pub fn to_read<'a>(
    events: impl IntoIterator<Item = &'a QueuedEvent>,
    cfg: &DeliveryConfig,
) -> Vec<&'a str> {
    let mut refs: Vec<&str> = Vec::new();
    for e in events {
        if let EventBody::Stored { body_ref, .. } = &e.body {
            if cfg.routes_read_body(&e.source) && !refs.contains(&body_ref.as_str()) {
                refs.push(body_ref);
            }
        }
    }
    refs
}

/// The body `event` is routed with: its own when inline; when
/// claim-checked, the one read back (`read`, by [`to_read`]'s keys) if a
/// filter of its source reads the body, else none (no filter looks). A
/// body that should have been read and was not is a failure, retried: the
/// event is never routed without it.
pub fn routing_body<'a>(
    event: &'a QueuedEvent,
    cfg: &DeliveryConfig,
    read: &'a VecMap<String, String>,
) -> Result<&'a str, Failure> {
    match &event.body {
        EventBody::Inline { body } => Ok(body),
        EventBody::Stored { .. } if !cfg.routes_read_body(&event.source) => Ok(""),
        EventBody::Stored { body_ref, .. } => read.get(body_ref).map(String::as_str).ok_or_else(|| {
            Failure::new(
                ErrorCode::D1Unavailable,
                format!(
                    "the claim-checked body of event {} (payloads row {body_ref}) could not be read back from D1 for its routes' body filters; retrying",
                    event.event_id
                ),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receive::sources::{load_sources, secret_name};
    use serde_json::{json, Value};
    use std::collections::BTreeMap;

    fn cfg() -> DeliveryConfig {
        let sources = json!({
            "shop": {"scheme": "hmac-sha256", "routes": [{"to": "a", "filter": {"body": {"total": {"$gte": 100}}}}]},
            "plain": {"scheme": "hmac-sha256", "routes": [{"to": "a"}]},
            "heads": {"scheme": "hmac-sha256", "routes": [{"to": "a", "filter": {"headers": {"x-region": "eu"}}}]},
        });
        let mut env: BTreeMap<String, Value> = BTreeMap::new();
        for name in ["shop", "plain", "heads"] {
            env.insert(secret_name(name), json!("s"));
        }
        env.insert("SOURCES".into(), sources);
        env.insert("DOWNSTREAM_SIGNING_SECRET".into(), json!("down"));
        env.insert(
            "DESTINATIONS".into(),
            json!({"a": {"url": "https://a.example/h"}}),
        );
        DeliveryConfig::load(&env, &load_sources(&env).unwrap()).unwrap()
    }

    fn event(id: &str, source: &str, stored: bool) -> QueuedEvent {
        let body = if stored {
            EventBody::Stored {
                body_ref: id.into(),
                body_bytes: 200_000,
            }
        } else {
            EventBody::Inline {
                body: "{\"total\":5}".into(),
            }
        };
        QueuedEvent {
            v: 1,
            event_id: id.into(),
            idempotency_key: format!("{source}:{id}"),
            source: source.into(),
            delivery_id: None,
            received_at_ms: 0,
            headers: Default::default(),
            body,
        }
    }

    #[test]
    fn only_claim_checked_bodies_a_filter_reads_are_read_back() {
        let cfg = cfg();
        // (event, source, claim-checked, read back)
        let table = [
            ("e1", "shop", true, true),
            ("e2", "shop", false, false),
            ("e3", "plain", true, false),
            ("e4", "heads", true, false),
            ("e5", "unknown", true, false),
        ];
        let events: Vec<QueuedEvent> = table
            .iter()
            .map(|&(id, source, stored, _)| event(id, source, stored))
            .collect();
        let want: Vec<&str> = table.iter().filter(|t| t.3).map(|t| t.0).collect();
        assert_eq!(to_read(&events, &cfg), want);
        // The same body twice in a batch (a redelivered message) is read once.
        let twice = [event("e1", "shop", true), event("e1", "shop", true)];
        assert_eq!(to_read(&twice, &cfg), ["e1"]);
    }

    #[test]
    fn an_event_is_routed_with_its_whole_body_or_not_at_all() {
        let cfg = cfg();
        let mut read = VecMap::new();
        read.insert("e1".to_string(), "{\"total\":250}".to_string());
        let routed = |e: &QueuedEvent| routing_body(e, &cfg, &read).map(str::to_string);
        assert_eq!(
            routed(&event("e1", "shop", true)).unwrap(),
            "{\"total\":250}"
        );
        assert_eq!(
            routed(&event("e2", "shop", false)).unwrap(),
            "{\"total\":5}"
        );
        assert_eq!(
            routed(&event("e3", "plain", true)).unwrap(),
            "",
            "no filter reads it"
        );
        let missing = routed(&event("e9", "shop", true)).unwrap_err();
        assert_eq!(missing.code, ErrorCode::D1Unavailable);
        assert!(
            missing.message.contains("e9") && missing.message.contains("retrying"),
            "{}",
            missing.message
        );
    }
}
