//! The alert a receiver gets (DESIGN §5): a Slack-compatible JSON body
//! `{"text": "…", "alert": {"id", "kind", "state", "detail", "since"[, "resolved_at"]}}`
//! and headers signed like a downstream delivery (`X-Timestamp`,
//! `X-Signature` keyed by `DOWNSTREAM_SIGNING_SECRET`), with
//! `X-Operation-Id: {id}:{state}:{since}` so a receiver can drop a repeat.
//!
//! Built only from the alarm's id, state, times and detail: no setting or
//! secret reaches it. Times are unix milliseconds, like every admin answer.

use super::machine::AlarmRecord;
use super::AlarmId;
use crate::deliver::request::signature_headers;
use crate::signature::SigningKey;
use crate::state::{AlarmKind, AlarmState};
use crate::support::utc::utc_minute;
use crate::UnixMillis;
use serde_json::{json, Value};

/// One alert, as sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    /// `{kind}:{subject}`.
    pub id: AlarmId,
    /// `firing` or `resolved`.
    pub state: AlarmState,
    /// What to act on (a JSON object).
    pub detail: Value,
    /// When the condition started.
    pub since: UnixMillis,
    /// When it ended, for a `resolved` alert.
    pub resolved_at: Option<UnixMillis>,
}

impl From<&AlarmRecord> for Alert {
    fn from(r: &AlarmRecord) -> Alert {
        Alert {
            id: r.id.clone(),
            state: r.state,
            detail: r.detail.clone(),
            since: r.since,
            resolved_at: r.resolved_at,
        }
    }
}

impl Alert {
    /// The alert `POST /api/v1/admin/alerts/test` sends at `now`: kind
    /// `test`, subject `manual`, firing, with the operator's name in detail.
    pub fn test(now: UnixMillis, actor: &str) -> Alert {
        Alert {
            id: AlarmId::new(AlarmKind::Test, "manual"),
            state: AlarmState::Firing,
            detail: json!({"requested_by": actor, "note": "a test alert; nothing is wrong"}),
            since: now,
            resolved_at: None,
        }
    }

    /// `{id}:{state}:{since}`: the same for every retry of this alert,
    /// different for its resolve and for a later episode.
    pub fn operation_id(&self) -> String {
        format!("{}:{}:{}", self.id, self.state.as_str(), self.since)
    }

    /// The JSON body, to sign and send.
    pub fn body(&self) -> String {
        let mut alert = json!({
            "id": self.id.to_string(),
            "kind": self.id.kind.as_str(),
            "state": self.state.as_str(),
            "detail": self.detail,
            "since": self.since,
        });
        if let Some(at) = self.resolved_at {
            alert["resolved_at"] = json!(at);
        }
        json!({"text": self.text(), "alert": alert}).to_string()
    }

    /// The one-line text Slack shows: state, kind, subject, since and the
    /// detail's plain figures. `&`, `<` and `>` are escaped as Slack asks,
    /// so a URL or an error message cannot become a link or a mention.
    pub fn text(&self) -> String {
        let figures: Vec<String> = match &self.detail {
            Value::Object(map) => map
                .iter()
                .filter(|(_, v)| !v.is_null() && !v.is_object() && !v.is_array())
                .map(|(k, v)| {
                    format!(
                        "{k}: {}",
                        v.as_str().map_or_else(|| v.to_string(), str::to_string)
                    )
                })
                .collect(),
            _ => Vec::new(),
        };
        let when = match self.resolved_at {
            Some(at) => format!(
                "since {}, resolved {}",
                utc_minute(self.since),
                utc_minute(at)
            ),
            None => format!("since {}", utc_minute(self.since)),
        };
        let line = format!(
            "[hookrelay] {} {} for {} {when}. {}",
            self.state.as_str().to_uppercase(),
            self.id.kind.as_str(),
            self.id.subject,
            figures.join(", ")
        );
        slack_escape(line.trim_end())
    }

    /// The headers for a POST of `body` at `now_s`, signed with `key`.
    pub fn headers(
        &self,
        key: &SigningKey,
        now_s: i64,
        body: &[u8],
    ) -> [(&'static str, String); 4] {
        signature_headers(&self.operation_id(), key, now_s, body)
    }
}

fn slack_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::{hmac_sha256, verify_one, HeaderLookup, KeyForm};

    fn alert(state: AlarmState, resolved_at: Option<i64>) -> Alert {
        Alert {
            id: AlarmId::new(AlarmKind::BreakerOpen, "https://down.example/<x>"),
            state,
            detail: json!({"not_closed_ms": 720_000, "cause": "UPSTREAM_5XX", "threshold_ms": 600_000, "extra": null}),
            since: 1_796_300_000_000,
            resolved_at,
        }
    }

    #[test]
    fn the_body_has_the_designed_shape_and_slack_text() {
        let firing: Value = serde_json::from_str(&alert(AlarmState::Firing, None).body()).unwrap();
        assert_eq!(
            firing["alert"]["id"],
            "breaker_open:https://down.example/<x>"
        );
        assert_eq!(firing["alert"]["kind"], "breaker_open");
        assert_eq!(firing["alert"]["state"], "firing");
        assert_eq!(firing["alert"]["since"], 1_796_300_000_000_i64);
        assert_eq!(firing["alert"]["detail"]["cause"], "UPSTREAM_5XX");
        assert!(firing["alert"].get("resolved_at").is_none());
        let text = firing["text"].as_str().unwrap();
        assert!(text.starts_with("[hookrelay] FIRING breaker_open for https://down.example/&lt;x&gt; since 2026-12-03"), "{text}");
        assert!(
            text.contains("cause: UPSTREAM_5XX") && !text.contains("extra"),
            "{text}"
        );
        let resolved: Value =
            serde_json::from_str(&alert(AlarmState::Resolved, Some(1_796_300_600_000)).body())
                .unwrap();
        assert_eq!(resolved["alert"]["state"], "resolved");
        assert_eq!(resolved["alert"]["resolved_at"], 1_796_300_600_000_i64);
        assert!(resolved["text"].as_str().unwrap().contains("RESOLVED"));
    }

    #[test]
    fn the_headers_verify_as_a_downstream_delivery_and_name_the_operation() {
        let key = SigningKey::from_secret(KeyForm::Raw, "down-secret").unwrap();
        let a = alert(AlarmState::Firing, None);
        let body = a.body();
        let headers = a.headers(&key, 1_796_300_000, body.as_bytes());
        let pairs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert!(verify_one(
            hmac_sha256(),
            &key,
            &pairs[..],
            body.as_bytes(),
            1_796_300_010,
            300
        )
        .is_ok());
        assert_eq!(
            pairs[..].header("x-operation-id"),
            Some("breaker_open:https://down.example/<x>:firing:1796300000000")
        );
        assert!(!body.contains("down-secret"));
        let resolved = alert(AlarmState::Resolved, Some(1));
        assert_ne!(resolved.operation_id(), a.operation_id());
    }

    #[test]
    fn a_test_alert_is_kind_test_and_firing() {
        let t = Alert::test(5, "admin@example");
        assert_eq!(
            (t.id.to_string(), t.state),
            ("test:manual".to_string(), AlarmState::Firing)
        );
        assert_eq!(t.operation_id(), "test:manual:firing:5");
    }
}
