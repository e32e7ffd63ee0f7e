//! Hostile input for every preset, the recipe parser and the form decoder,
//! natively and deterministically (the fuzz targets in `fuzz/` run the same
//! properties under libFuzzer): nothing panics, and every refusal formats.
//! Inputs are built from the fragments real headers are made of, so most of
//! them reach deep into the parsers instead of failing at the first byte.

use hookrelay_core::receive::parse_sources;
use hookrelay_core::signature::{verify, KeyForm, Request, SigningKey, PRESETS};
use hookrelay_core::support::form;
use serde_json::{json, Value};

/// xorshift64*: a fixed sequence, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }

    /// Up to `n` fragments glued together.
    fn text(&mut self, from: &[&str], n: u64) -> String {
        let count = self.next() % (n + 1);
        (0..count).map(|_| self.pick(from)).collect()
    }
}

const FRAGMENTS: [&str; 28] = [
    "v0=",
    "v1=",
    "v1,",
    "sha256=",
    "sha1=",
    "t=",
    "ts=",
    "h1=",
    ",",
    ";",
    " ",
    "=",
    "1700000000",
    "1700000000000",
    "-9223372036854775808",
    "99999999999999999999",
    "2023-11-14T22:13:20Z",
    "abcd",
    "00",
    "ff",
    "q80=",
    "AAAA",
    "%3A",
    "%",
    "é",
    "\u{0}",
    "+",
    "/",
];

#[test]
fn no_preset_panics_on_hostile_headers_and_bodies() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let key = [SigningKey::from_secret(KeyForm::Raw, "hostile-secret").unwrap()];
    for round in 0..4_000 {
        for scheme in PRESETS.iter() {
            let names = scheme.secret_headers().into_iter().chain([
                "x-github-delivery".into(),
                "twitch-eventsub-message-type".into(),
            ]);
            let content_type =
                rng.pick(&["application/x-www-form-urlencoded", "application/json", ""]);
            let mut headers: Vec<(String, String)> =
                names.map(|n| (n, rng.text(&FRAGMENTS, 12))).collect();
            headers.push(("content-type".into(), content_type.into()));
            let body = rng.text(&FRAGMENTS, 20);
            let url = format!(
                "https://r.example/webhooks/a?bodySHA256={}",
                rng.text(&FRAGMENTS, 3)
            );
            let req = Request {
                method: "POST",
                url: &url,
                headers: &headers[..],
                body: body.as_bytes(),
                form: round % 2 == 0,
            };
            for (now, tolerance) in [(1_700_000_000, 300), (i64::MAX, u32::MAX), (i64::MIN, 0)] {
                if let Err(e) = verify(scheme, &key, &req, now, tolerance) {
                    let _ = e.to_string();
                }
            }
        }
    }
}

const RECIPE_VALUES: [&str; 14] = [
    "sha256",
    "sha512",
    "hex",
    "base64url",
    "x-sig",
    "{body}",
    "{timestamp}.{body}",
    "{id}{body}",
    "/a/b",
    "s",
    "ms",
    "rfc3339",
    "",
    "{",
];
const RECIPE_FIELDS: [&str; 14] = [
    "hmac",
    "key",
    "header",
    "prefix",
    "parts",
    "encoding",
    "separator",
    "signed",
    "timestamp",
    "id",
    "answer",
    "token",
    "unit",
    "json",
];

/// The keys of a recipe's nested objects (`timestamp`, `id`, `parts`).
const NESTED_FIELDS: [&str; 6] = [
    "header",
    "json",
    "unit",
    "separator",
    "timestamp",
    "signature",
];

fn hostile_value(rng: &mut Rng, depth: u32) -> Value {
    match rng.next() % if depth > 2 { 4 } else { 6 } {
        0 => Value::Null,
        1 => json!(rng.next() % 300),
        2 | 3 => json!(rng.pick(&RECIPE_VALUES)),
        4 => json!([hostile_value(rng, depth + 1)]),
        _ => {
            let mut map = serde_json::Map::new();
            let keys: &[&str] = if depth == 0 {
                &RECIPE_FIELDS
            } else {
                &NESTED_FIELDS
            };
            for _ in 0..rng.next() % 5 {
                map.insert(rng.pick(keys).into(), hostile_value(rng, depth + 1));
            }
            Value::Object(map)
        }
    }
}

#[test]
fn no_recipe_panics_and_every_refusal_names_a_sources_key() {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    for _ in 0..50_000 {
        // Alone, and over a valid recipe so the later fields are reached.
        let mut scheme = hostile_value(&mut rng, 0);
        if rng.next().is_multiple_of(2) {
            let mut base =
                json!({"hmac": "sha256", "header": "x-sig", "encoding": "hex", "signed": "{body}"});
            for _ in 0..1 + rng.next() % 2 {
                base[rng.pick(&RECIPE_FIELDS)] = hostile_value(&mut rng, 1);
            }
            scheme = base;
        }
        match parse_sources(&json!({"acme": {"scheme": scheme}})) {
            Ok(specs) => {
                let _ = specs[0].scheme.secret_headers();
            }
            Err(e) => assert!(e.key.starts_with("SOURCES.acme"), "{scheme}: {}", e.key),
        }
    }
}

#[test]
fn the_form_decoder_never_panics() {
    let mut rng = Rng(0x94D0_49BB_1331_11EB);
    for _ in 0..50_000 {
        let body = rng.text(
            &[
                "a", "=", "&", "%", "%2", "%zz", "%C3", "%A9", "+", "é", "%FF", "b=c",
            ],
            12,
        );
        if let Ok(fields) = form::decode(body.as_bytes()) {
            assert!(form::to_object(fields).is_object());
        }
    }
}
