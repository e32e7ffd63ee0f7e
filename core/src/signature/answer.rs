//! The answer a provider needs on success, once its event is on the queue.

use super::scheme::Answer;

/// An HTTP answer as plain values, for the glue to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The status.
    pub status: u16,
    /// The `Content-Type`, when there is a body.
    pub content_type: Option<&'static str>,
    /// The body.
    pub body: String,
}

/// The answer for an event queued as `event_id`.
pub fn on_success(answer: Answer, event_id: &str) -> Reply {
    match answer {
        Answer::Queued => Reply {
            status: 202,
            content_type: Some("application/json"),
            body: format!(
                "{{\"event_id\":{},\"status\":\"queued\"}}",
                serde_json::Value::String(event_id.to_string())
            ),
        },
        Answer::Empty(status) => Reply {
            status,
            content_type: None,
            body: String::new(),
        },
        Answer::Twiml => Reply {
            status: 200,
            content_type: Some("text/xml"),
            body: "<Response/>".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_answer_is_what_its_provider_needs() {
        let table = [
            (
                Answer::Queued,
                202,
                Some("application/json"),
                r#"{"event_id":"evt_\"1","status":"queued"}"#,
            ),
            (Answer::Empty(200), 200, None, ""),
            (Answer::Empty(204), 204, None, ""),
            (Answer::Twiml, 200, Some("text/xml"), "<Response/>"),
        ];
        for (answer, status, content_type, body) in table {
            let want = Reply {
                status,
                content_type,
                body: body.into(),
            };
            assert_eq!(on_success(answer, "evt_\"1"), want, "{answer:?}");
        }
    }
}
