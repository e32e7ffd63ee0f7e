//! The scheme data model: everything a signature scheme says, as values.
//!
//! A preset (`presets.rs`) and a recipe (`recipe.rs`) are both a
//! [`Scheme`]; one verifier (`verifier.rs`) reads any of them. Text is a
//! `Cow` so the presets are a static table and a recipe owns its strings.

use std::borrow::Cow;

/// Text a scheme holds: borrowed in the presets, owned in a recipe.
pub type Text = Cow<'static, str>;

/// A signature scheme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheme {
    /// The preset's name, or `recipe` for a scheme written in `SOURCES`.
    pub name: Text,
    /// What proves the request came from the provider.
    pub check: Check,
    /// Where the timestamp is, if the scheme has one.
    pub timestamp: Option<Timestamp>,
    /// The timestamp's default tolerance either way, in seconds (a source's
    /// `tolerance_s` overrides it).
    pub tolerance_s: u32,
    /// Where the provider's delivery id is, if it gives one.
    pub id: Option<Place>,
    /// Where to look when [`Scheme::id`] is absent.
    pub id_fallback: Option<Place>,
    /// A body without the id is refused (Stripe's event `id` always exists,
    /// and the older `stripe` scheme refused a body without it).
    pub id_required: bool,
    /// A second spelling of the scheme's header names: when a header that
    /// starts with the first text is absent, the one starting with the
    /// second is read (`webhook-` and `svix-`).
    pub alias: Option<(Text, Text)>,
    /// The provider's handshake, if any.
    pub handshake: Option<Handshake>,
    /// What a provider needs to hear once its event is on the queue.
    pub answer: Answer,
}

/// What proves the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// An HMAC over a signed text.
    Mac {
        /// The hash.
        mac: MacAlg,
        /// How the secret becomes the HMAC key.
        key: KeyForm,
        /// Where the presented signatures are.
        at: SignatureAt,
        /// What is signed.
        signed: Signed,
        /// The forms of the URL a signature may cover.
        urls: UrlForms,
    },
    /// A header equal to the secret (compared in constant time).
    Token {
        /// The header (lower-case).
        header: Text,
    },
    /// A public-key signature under the source's `public_key`.
    PublicKey {
        /// The algorithm.
        alg: PublicKeyAlg,
        /// Where the presented signature is.
        at: SignatureAt,
        /// What is signed.
        signed: Signed,
    },
}

/// The HMAC hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MacAlg {
    /// HMAC-SHA1 (Twilio, Intercom).
    Sha1,
    /// HMAC-SHA256.
    Sha256,
    /// HMAC-SHA512.
    Sha512,
}

impl MacAlg {
    /// The MAC's length in bytes; a presented value of any other length
    /// cannot match.
    pub fn output_len(self) -> usize {
        match self {
            MacAlg::Sha1 => 20,
            MacAlg::Sha256 => 32,
            MacAlg::Sha512 => 64,
        }
    }
}

/// How the configured secret becomes the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyForm {
    /// The secret's bytes as they are.
    Raw,
    /// The secret is standard base64 of the key.
    Base64,
    /// `whsec_` then standard base64 of the key (the prefix is optional).
    Whsec,
}

/// The public-key algorithms workerd's WebCrypto offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublicKeyAlg {
    /// Ed25519, the key as 32 bytes of hex (Discord).
    Ed25519,
    /// ECDSA P-256 with SHA-256, the key as base64 SPKI and the signature
    /// as base64 DER (SendGrid).
    EcdsaP256,
}

/// Where the presented signatures are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureAt {
    /// The header (lower-case).
    pub header: Text,
    /// How its value is laid out.
    pub layout: Layout,
    /// How each signature is written.
    pub encoding: Encoding,
}

/// How a signature header's value is laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// One signature, or several separated by `separator` (ASCII whitespace
    /// separates too, since no encoding holds it), each after `prefix`. An
    /// entry without the prefix is skipped (another version, or a downgrade).
    Whole {
        /// Text before each signature (`sha256=`), possibly empty.
        prefix: Text,
        /// Text between several signatures, if the provider sends several.
        separator: Option<Text>,
    },
    /// `key=value` parts (`t=…,v1=…,v1=…`): the timestamp is one part and
    /// each signature another.
    Parts {
        /// Text between the parts.
        separator: Text,
        /// The timestamp's key.
        timestamp: Text,
        /// The signatures' key.
        signature: Text,
    },
}

/// How a signature is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Hex, either case.
    Hex,
    /// Standard base64, padded.
    Base64,
    /// URL-safe base64, with or without padding.
    Base64Url,
}

/// What is signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signed {
    /// A template (`template.rs`): literal text with `{body}`,
    /// `{timestamp}`, `{id}`, `{url}`, `{method}`, and `{url_decoded}`
    /// (the URL with HubSpot's escapes decoded).
    Template(Text),
    /// Twilio: the URL, then each form field sorted by name as name and
    /// value; for a JSON body the URL's `bodySHA256` must be the hex
    /// SHA-256 of the body, and the URL alone is signed.
    Twilio,
}

/// The forms of the signed URL a signature may cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlForms {
    /// The URL exactly as configured or received.
    Exact,
    /// Also the URL without its port, and with its scheme's default port
    /// (`:443`, `:80` for `http`) when it has none: Twilio signs the URL
    /// as it was configured, with or without the port, and its libraries
    /// accept both.
    PortOrNot,
}

/// Where a value is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A header (lower-case).
    Header(Text),
    /// A JSON Pointer into the body (a form is seen as the object of its fields).
    Json(Text),
    /// The signature header's timestamp part ([`Layout::Parts`]).
    Part,
}

/// Where the timestamp is, and how to read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timestamp {
    /// Where it is.
    pub at: Place,
    /// Its unit.
    pub unit: TimeUnit,
    /// `{timestamp}` is the parsed number re-written in decimal, as the
    /// older schemes' libraries do (a leading `+` or zero then still
    /// verifies); otherwise it is the text exactly as received.
    pub canonical: bool,
}

/// A timestamp's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Unix seconds.
    Seconds,
    /// Unix milliseconds.
    Millis,
    /// RFC 3339 text.
    Rfc3339,
}

/// A provider's handshake: verified like any request, answered at once,
/// never enqueued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// Slack's `url_verification`: answer its `challenge`.
    Slack,
    /// Zoom's `endpoint.url_validation`: answer the token and its HMAC.
    Zoom,
    /// Twitch's `webhook_callback_verification`: answer its `challenge`.
    Twitch,
    /// Discord's PING (`"type": 0`): answer 204.
    DiscordPing,
}

/// What a provider needs to hear once its event is on the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 202 `{"event_id", "status": "queued"}`.
    Queued,
    /// This status with an empty body (200 or 204).
    Empty(u16),
    /// 200 `<Response/>` as `text/xml` (TwiML, for Twilio).
    Twiml,
}

impl Scheme {
    /// The headers that carry this scheme's signature, token or timestamp
    /// (lower-case), with their aliases: redacted wherever a request is
    /// stored or shown.
    pub fn secret_headers(&self) -> Vec<String> {
        let mut out = Vec::new();
        match &self.check {
            Check::Mac { at, .. } | Check::PublicKey { at, .. } => out.push(at.header.to_string()),
            Check::Token { header } => out.push(header.to_string()),
        }
        if let Some(Timestamp {
            at: Place::Header(h),
            ..
        }) = &self.timestamp
        {
            out.push(h.to_string());
        }
        if let Some((from, to)) = &self.alias {
            let aliased: Vec<String> = out
                .iter()
                .filter_map(|h| {
                    h.strip_prefix(from.as_ref())
                        .map(|rest| format!("{to}{rest}"))
                })
                .collect();
            out.extend(aliased);
        }
        out
    }

    /// How the secret becomes the key (a token is compared as it is).
    pub fn key_form(&self) -> KeyForm {
        match &self.check {
            Check::Mac { key, .. } => *key,
            Check::Token { .. } | Check::PublicKey { .. } => KeyForm::Raw,
        }
    }

    /// Whether the scheme signs or checks a timestamp.
    pub fn has_timestamp(&self) -> bool {
        self.timestamp.is_some()
    }

    /// The header that carries the delivery id, when it is a header.
    pub fn id_header(&self) -> Option<&str> {
        match &self.id {
            Some(Place::Header(h)) => Some(h),
            _ => None,
        }
    }

    /// Where the delivery id comes from, as a refusal names it.
    pub fn id_source(&self) -> String {
        match (&self.id, &self.id_fallback) {
            (Some(p), None) => self.id_label(p),
            (Some(p), Some(f)) => format!("{} (or {})", self.id_label(p), self.id_label(f)),
            _ => "the delivery id".into(),
        }
    }

    /// An id's place as a refusal names it: a preset's body field as its
    /// provider's (`the Stripe event's "id"`).
    fn id_label(&self, place: &Place) -> String {
        match place {
            Place::Json(p) if self.name != "recipe" => {
                let mut name = self.name.to_string();
                name[..1].make_ascii_uppercase();
                format!("the {name} event's \"{}\"", p.trim_start_matches('/'))
            }
            _ => place_label(place),
        }
    }
}

/// A place as a message names it: a header by its name, a JSON Pointer as
/// the body's field.
pub fn place_label(place: &Place) -> String {
    match place {
        Place::Header(h) => h.to_string(),
        Place::Json(p) => format!("the body's \"{}\"", p.trim_start_matches('/')),
        Place::Part => "the signature header's timestamp".into(),
    }
}
