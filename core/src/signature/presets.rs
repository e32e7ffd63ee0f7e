//! The presets: DESIGN §2's table, one row per provider, as data.
//!
//! Header names are lower-case, except a delivery id's, which keeps its
//! provider's spelling because refusals name it (lookups ignore case). A
//! preset's timestamp text is signed as
//! received, except for the four older schemes, whose libraries re-write
//! the parsed number (`canonical`).

use super::scheme::{
    Answer, Check, Encoding, Handshake, KeyForm, Layout, MacAlg, Place, PublicKeyAlg, Scheme,
    SignatureAt, Signed, TimeUnit, Timestamp, UrlForms,
};
use std::borrow::Cow::Borrowed as B;

const fn header(name: &'static str) -> Option<Place> {
    Some(Place::Header(B(name)))
}

const fn json(pointer: &'static str) -> Option<Place> {
    Some(Place::Json(B(pointer)))
}

/// One signature, after `prefix` (possibly empty).
const fn whole(header: &'static str, prefix: &'static str, encoding: Encoding) -> SignatureAt {
    SignatureAt {
        header: B(header),
        layout: Layout::Whole {
            prefix: B(prefix),
            separator: None,
        },
        encoding,
    }
}

/// Several signatures after `prefix`, separated by `separator`.
const fn several(
    header: &'static str,
    prefix: &'static str,
    separator: &'static str,
    encoding: Encoding,
) -> SignatureAt {
    SignatureAt {
        header: B(header),
        layout: Layout::Whole {
            prefix: B(prefix),
            separator: Some(B(separator)),
        },
        encoding,
    }
}

/// `key=value` parts.
const fn parts(
    header: &'static str,
    separator: &'static str,
    timestamp: &'static str,
    signature: &'static str,
) -> SignatureAt {
    SignatureAt {
        header: B(header),
        layout: Layout::Parts {
            separator: B(separator),
            timestamp: B(timestamp),
            signature: B(signature),
        },
        encoding: Encoding::Hex,
    }
}

const fn hmac(mac: MacAlg, key: KeyForm, at: SignatureAt, signed: &'static str) -> Check {
    Check::Mac {
        mac,
        key,
        at,
        signed: Signed::Template(B(signed)),
        urls: UrlForms::Exact,
    }
}

const fn sha256(at: SignatureAt, signed: &'static str) -> Check {
    hmac(MacAlg::Sha256, KeyForm::Raw, at, signed)
}

const fn ts(at: Place, unit: TimeUnit, canonical: bool) -> Option<Timestamp> {
    Some(Timestamp {
        at,
        unit,
        canonical,
    })
}

const fn seconds(name: &'static str) -> Option<Timestamp> {
    ts(Place::Header(B(name)), TimeUnit::Seconds, false)
}

/// The row of a preset that signs the body alone, with no timestamp, no
/// fallback id, no handshake, and the 202 answer.
const fn body_only(name: &'static str, check: Check, id: Option<Place>) -> Scheme {
    Scheme {
        name: B(name),
        check,
        timestamp: None,
        tolerance_s: 300,
        id,
        id_fallback: None,
        id_required: false,
        alias: None,
        handshake: None,
        answer: Answer::Queued,
    }
}

/// `standard-webhooks`: also read under the `svix-` header names, and its
/// timestamp signed canonically.
const fn standard() -> Scheme {
    Scheme {
        name: B("standard-webhooks"),
        check: hmac(
            MacAlg::Sha256,
            KeyForm::Whsec,
            several("webhook-signature", "v1,", " ", Encoding::Base64),
            "{id}.{timestamp}.{body}",
        ),
        timestamp: ts(
            Place::Header(B("webhook-timestamp")),
            TimeUnit::Seconds,
            true,
        ),
        tolerance_s: 300,
        id: header("webhook-id"),
        id_fallback: None,
        id_required: false,
        alias: Some((B("webhook-"), B("svix-"))),
        handshake: None,
        answer: Answer::Queued,
    }
}

/// `stripe`: the event `id` is required, as the older scheme required it.
const fn stripe_row() -> Scheme {
    Scheme {
        name: B("stripe"),
        check: sha256(
            parts("stripe-signature", ",", "t", "v1"),
            "{timestamp}.{body}",
        ),
        timestamp: ts(Place::Part, TimeUnit::Seconds, true),
        tolerance_s: 300,
        id: json("/id"),
        id_fallback: None,
        id_required: true,
        alias: None,
        handshake: None,
        answer: Answer::Queued,
    }
}

/// DESIGN §2's table, in its order.
pub static PRESETS: [Scheme; 20] = [
    standard(),
    stripe_row(),
    body_only(
        "github",
        sha256(
            whole("x-hub-signature-256", "sha256=", Encoding::Hex),
            "{body}",
        ),
        header("X-GitHub-Delivery"),
    ),
    Scheme {
        name: B("hmac-sha256"),
        check: sha256(
            several("x-signature", "", ",", Encoding::Hex),
            "{timestamp}.{body}",
        ),
        timestamp: ts(Place::Header(B("x-timestamp")), TimeUnit::Seconds, true),
        tolerance_s: 300,
        id: header("X-Operation-Id"),
        id_fallback: None,
        id_required: false,
        alias: None,
        handshake: None,
        answer: Answer::Queued,
    },
    Scheme {
        name: B("shopify"),
        check: sha256(
            whole("x-shopify-hmac-sha256", "", Encoding::Base64),
            "{body}",
        ),
        timestamp: None,
        tolerance_s: 300,
        id: header("X-Shopify-Event-Id"),
        id_fallback: header("X-Shopify-Webhook-Id"),
        id_required: false,
        // Shopify's newer "events" webhooks drop the `X-` of each header.
        alias: Some((B("x-shopify-"), B("shopify-"))),
        handshake: None,
        answer: Answer::Queued,
    },
    Scheme {
        name: B("slack"),
        check: sha256(
            whole("x-slack-signature", "v0=", Encoding::Hex),
            "v0:{timestamp}:{body}",
        ),
        timestamp: seconds("x-slack-request-timestamp"),
        tolerance_s: 300,
        id: json("/event_id"),
        id_fallback: None,
        id_required: false,
        alias: None,
        handshake: Some(Handshake::Slack),
        answer: Answer::Empty(200),
    },
    Scheme {
        name: B("twilio"),
        check: Check::Mac {
            mac: MacAlg::Sha1,
            key: KeyForm::Raw,
            at: whole("x-twilio-signature", "", Encoding::Base64),
            signed: Signed::Twilio,
            // Twilio signs the URL as configured there, port or not.
            urls: UrlForms::PortOrNot,
        },
        timestamp: None,
        tolerance_s: 300,
        id: header("I-Twilio-Idempotency-Token"),
        id_fallback: None,
        id_required: false,
        alias: None,
        handshake: None,
        answer: Answer::Twiml,
    },
    Scheme {
        name: B("zoom"),
        check: sha256(
            whole("x-zm-signature", "v0=", Encoding::Hex),
            "v0:{timestamp}:{body}",
        ),
        timestamp: seconds("x-zm-request-timestamp"),
        tolerance_s: 300,
        id: None,
        id_fallback: None,
        id_required: false,
        alias: None,
        handshake: Some(Handshake::Zoom),
        answer: Answer::Empty(200),
    },
    Scheme {
        name: B("linear"),
        check: sha256(whole("linear-signature", "", Encoding::Hex), "{body}"),
        timestamp: ts(Place::Json(B("/webhookTimestamp")), TimeUnit::Millis, false),
        tolerance_s: 60,
        id: header("Linear-Delivery"),
        id_fallback: None,
        id_required: false,
        alias: None,
        handshake: None,
        answer: Answer::Queued,
    },
    Scheme {
        name: B("paddle"),
        check: sha256(
            parts("paddle-signature", ";", "ts", "h1"),
            "{timestamp}:{body}",
        ),
        timestamp: ts(Place::Part, TimeUnit::Seconds, false),
        tolerance_s: 5,
        id: json("/event_id"),
        id_fallback: None,
        id_required: false,
        alias: None,
        handshake: None,
        answer: Answer::Queued,
    },
    body_only(
        "intercom",
        hmac(
            MacAlg::Sha1,
            KeyForm::Raw,
            whole("x-hub-signature", "sha1=", Encoding::Hex),
            "{body}",
        ),
        json("/id"),
    ),
    body_only(
        "square",
        sha256(
            whole("x-square-hmacsha256-signature", "", Encoding::Base64),
            "{url}{body}",
        ),
        json("/event_id"),
    ),
    body_only(
        "pagerduty",
        sha256(
            several("x-pagerduty-signature", "v1=", ",", Encoding::Hex),
            "{body}",
        ),
        json("/event/id"),
    ),
    Scheme {
        name: B("twitch"),
        check: sha256(
            whole(
                "twitch-eventsub-message-signature",
                "sha256=",
                Encoding::Hex,
            ),
            "{id}{timestamp}{body}",
        ),
        timestamp: ts(
            Place::Header(B("twitch-eventsub-message-timestamp")),
            TimeUnit::Rfc3339,
            false,
        ),
        tolerance_s: 600,
        id: header("Twitch-Eventsub-Message-Id"),
        id_fallback: None,
        id_required: false,
        alias: None,
        handshake: Some(Handshake::Twitch),
        answer: Answer::Queued,
    },
    Scheme {
        name: B("hubspot"),
        check: sha256(
            whole("x-hubspot-signature-v3", "", Encoding::Base64),
            "{method}{url_decoded}{body}{timestamp}",
        ),
        timestamp: ts(
            Place::Header(B("x-hubspot-request-timestamp")),
            TimeUnit::Millis,
            false,
        ),
        tolerance_s: 300,
        id: None,
        id_fallback: None,
        id_required: false,
        alias: None,
        handshake: None,
        answer: Answer::Queued,
    },
    body_only(
        "typeform",
        sha256(
            whole("typeform-signature", "sha256=", Encoding::Base64),
            "{body}",
        ),
        json("/event_id"),
    ),
    // Its delivery id repeats within a second, so the body's hash keys it.
    body_only(
        "woocommerce",
        sha256(
            whole("x-wc-webhook-signature", "", Encoding::Base64),
            "{body}",
        ),
        None,
    ),
    Scheme {
        name: B("gitlab"),
        check: Check::Token {
            header: B("x-gitlab-token"),
        },
        timestamp: None,
        tolerance_s: 300,
        id: header("Idempotency-Key"),
        id_fallback: header("X-Gitlab-Event-UUID"),
        id_required: false,
        alias: None,
        handshake: None,
        answer: Answer::Queued,
    },
    Scheme {
        name: B("discord"),
        check: Check::PublicKey {
            alg: PublicKeyAlg::Ed25519,
            at: whole("x-signature-ed25519", "", Encoding::Hex),
            signed: Signed::Template(B("{timestamp}{body}")),
        },
        timestamp: seconds("x-signature-timestamp"),
        tolerance_s: 300,
        id: None,
        id_fallback: None,
        id_required: false,
        alias: None,
        handshake: Some(Handshake::DiscordPing),
        answer: Answer::Empty(204),
    },
    Scheme {
        name: B("sendgrid"),
        check: Check::PublicKey {
            alg: PublicKeyAlg::EcdsaP256,
            at: whole(
                "x-twilio-email-event-webhook-signature",
                "",
                Encoding::Base64,
            ),
            signed: Signed::Template(B("{timestamp}{body}")),
        },
        timestamp: seconds("x-twilio-email-event-webhook-timestamp"),
        tolerance_s: 300,
        id: None,
        id_fallback: None,
        id_required: false,
        alias: None,
        handshake: None,
        answer: Answer::Queued,
    },
];

/// The preset named `name`.
pub fn preset(name: &str) -> Option<&'static Scheme> {
    PRESETS.iter().find(|p| p.name == name)
}

/// The preset names, for an error message.
pub fn preset_names() -> String {
    let names: Vec<&str> = PRESETS.iter().map(|p| p.name.as_ref()).collect();
    names.join(", ")
}

/// The four older schemes, by the names they had, for callers that sign
/// with them (downstream deliveries and alerts use `hmac-sha256`).
pub fn standard_webhooks() -> &'static Scheme {
    &PRESETS[0]
}

/// `stripe`.
pub fn stripe() -> &'static Scheme {
    &PRESETS[1]
}

/// `github`.
pub fn github() -> &'static Scheme {
    &PRESETS[2]
}

/// `hmac-sha256`, the scheme the relay signs its own calls with.
pub fn hmac_sha256() -> &'static Scheme {
    &PRESETS[3]
}
