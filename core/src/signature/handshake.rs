//! Handshakes: a provider proving an endpoint before it sends events.
//!
//! Each is verified like any request first (the front door calls this only
//! after the signature matched), then answered at once and never enqueued.

use super::answer::Reply;
use super::mac::{sha256, SigningKey};
use super::places;
use super::scheme::{Handshake, Scheme};
use super::HeaderLookup;
use serde_json::Value;

/// The answer to a handshake, or `None` when the request is an event.
/// `view` is the body's view; `key` the source's current secret (Zoom's
/// answer is keyed by it; a public-key source has none).
pub fn answer(
    scheme: &Scheme,
    headers: &(impl HeaderLookup + ?Sized),
    view: &Value,
    key: Option<&SigningKey>,
) -> Option<Reply> {
    let text = |body: &str| Reply {
        status: 200,
        content_type: Some("text/plain"),
        body: body.to_string(),
    };
    match scheme.handshake? {
        // Slack accepts the bare challenge too; its own Bolt answers JSON.
        Handshake::Slack if view["type"] == "url_verification" => Some(Reply {
            status: 200,
            content_type: Some("application/json"),
            body: serde_json::json!({"challenge": view["challenge"].as_str()?}).to_string(),
        }),
        Handshake::Zoom if view["event"] == "endpoint.url_validation" => {
            let token = view.pointer("/payload/plainToken")?.as_str()?;
            let encrypted = hex::encode(sha256(key?.as_bytes(), &[token]));
            let body = serde_json::json!({"plainToken": token, "encryptedToken": encrypted});
            Some(Reply {
                status: 200,
                content_type: Some("application/json"),
                body: body.to_string(),
            })
        }
        Handshake::Twitch
            if places::header(scheme, headers, "twitch-eventsub-message-type")
                == Some("webhook_callback_verification") =>
        {
            Some(text(view["challenge"].as_str()?))
        }
        Handshake::DiscordPing if view["type"] == 0 => Some(Reply {
            status: 204,
            content_type: None,
            body: String::new(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::{preset, KeyForm};
    use serde_json::json;

    fn key() -> SigningKey {
        SigningKey::from_secret(KeyForm::Raw, "zoom-secret").unwrap()
    }

    /// Preset, headers, body, and the answer (status, content type, body).
    type Case<'a> = (
        &'a str,
        &'a [(&'a str, &'a str)],
        Value,
        Option<(u16, Option<&'a str>, &'a str)>,
    );

    #[test]
    fn each_handshake_gets_its_answer_and_an_event_gets_none() {
        let none: [(&str, &str); 0] = [];
        let twitch_type = [(
            "twitch-eventsub-message-type",
            "webhook_callback_verification",
        )];
        #[rustfmt::skip]
        let table: [Case; 8] = [
            ("slack", &none, json!({"type": "url_verification", "challenge": "c-1"}), Some((200, Some("application/json"), r#"{"challenge":"c-1"}"#))),
            ("slack", &none, json!({"type": "event_callback", "event_id": "Ev1"}), None),
            ("twitch", &twitch_type, json!({"challenge": "pogchamp"}), Some((200, Some("text/plain"), "pogchamp"))),
            ("twitch", &none, json!({"challenge": "pogchamp"}), None),
            ("discord", &none, json!({"type": 0}), Some((204, None, ""))),
            ("discord", &none, json!({"type": 1}), None),
            ("zoom", &none, json!({"event": "meeting.started"}), None),
            ("github", &none, json!({"type": "url_verification", "challenge": "x"}), None),
        ];
        for (name, headers, view, want) in table {
            let got = answer(preset(name).unwrap(), headers, &view, Some(&key()));
            let got = got
                .as_ref()
                .map(|r| (r.status, r.content_type, r.body.as_str()));
            assert_eq!(got, want, "{name} {view}");
        }
    }

    #[test]
    fn zooms_url_validation_answers_the_token_and_its_hmac() {
        // Zoom's documentation: encryptedToken is the hex HMAC-SHA256 of
        // plainToken under the secret token (checked with
        // `printf %s qgg8vlvZRS6UYooatFL8Aw | openssl dgst -sha256 -hmac zoom-secret`).
        let view = json!({"event": "endpoint.url_validation", "payload": {"plainToken": "qgg8vlvZRS6UYooatFL8Aw"}});
        let none: [(&str, &str); 0] = [];
        let got = answer(preset("zoom").unwrap(), &none[..], &view, Some(&key())).unwrap();
        let body: Value = serde_json::from_str(&got.body).unwrap();
        let want = "b17f0320a1322a509340a1a835b3d9edbc491f0b0790ed2d20d0604d39dfe922";
        assert_eq!(
            body,
            json!({"plainToken": "qgg8vlvZRS6UYooatFL8Aw", "encryptedToken": want})
        );
        assert_eq!(
            (got.status, got.content_type),
            (200, Some("application/json"))
        );
    }
}
