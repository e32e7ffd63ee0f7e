//! Native signature-verification throughput, in MB/s, for each scheme over
//! 1 KiB, 64 KiB and 1 MiB bodies.
//!
//! A plain timed loop (`harness = false`, no criterion): every case is
//! warmed up, then verified repeatedly for about `TARGET` of wall time.
//! Run with `cargo bench -p hookrelay-core --bench signatures`. It only
//! prints numbers; nothing here asserts a time.

use hookrelay_core::signature::{
    self, sign_github, sign_hmac_sha256, sign_standard_webhooks, sign_stripe, verify_one,
    SigningKey,
};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Wall time spent measuring each case.
const TARGET: Duration = Duration::from_millis(400);
/// The signed timestamp, and the verifier's clock, so tolerance always passes.
const NOW_S: i64 = 1_700_000_000;
const SIZES: [(&str, usize); 3] = [
    ("1 KiB", 1024),
    ("64 KiB", 64 * 1024),
    ("1 MiB", 1024 * 1024),
];

/// The four older schemes, which the bench has measured since before the
/// presets: each names its preset.
#[derive(Debug, Clone, Copy)]
enum Scheme {
    StandardWebhooks,
    Stripe,
    Github,
    HmacSha256,
}

impl Scheme {
    const ALL: [Scheme; 4] = [
        Scheme::StandardWebhooks,
        Scheme::Stripe,
        Scheme::Github,
        Scheme::HmacSha256,
    ];

    fn data(self) -> &'static signature::Scheme {
        match self {
            Scheme::StandardWebhooks => signature::standard_webhooks(),
            Scheme::Stripe => signature::stripe(),
            Scheme::Github => signature::github(),
            Scheme::HmacSha256 => signature::hmac_sha256(),
        }
    }

    fn as_str(self) -> &'static str {
        &self.data().name
    }
}

fn secret(scheme: Scheme) -> &'static str {
    match scheme {
        Scheme::StandardWebhooks => "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        Scheme::Stripe => "whsec_demo_stripe_local_only",
        Scheme::Github => "demo-github-local-only",
        Scheme::HmacSha256 => "demo-hmac-local-only",
    }
}

/// A JSON object of exactly `len` bytes.
fn body(len: usize) -> Vec<u8> {
    let prefix = br#"{"data":""#;
    let suffix = br#""}"#;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(prefix);
    let fill = len - prefix.len() - suffix.len();
    out.extend((0..fill).map(|i| b'a' + (i % 26) as u8));
    out.extend_from_slice(suffix);
    out
}

/// The headers a sender of `scheme` would attach to `body`.
fn headers(scheme: Scheme, key: &SigningKey, body: &[u8]) -> Vec<(&'static str, String)> {
    let ts = NOW_S.to_string();
    match scheme {
        Scheme::StandardWebhooks => vec![
            ("webhook-id", "msg_bench".to_string()),
            ("webhook-timestamp", ts),
            (
                "webhook-signature",
                sign_standard_webhooks(key, "msg_bench", NOW_S, body),
            ),
        ],
        Scheme::Stripe => vec![("stripe-signature", sign_stripe(key, NOW_S, body))],
        Scheme::Github => vec![
            ("x-github-delivery", "bench-delivery".to_string()),
            ("x-hub-signature-256", sign_github(key, body)),
        ],
        Scheme::HmacSha256 => vec![
            ("x-timestamp", ts),
            ("x-operation-id", "op-bench".to_string()),
            ("x-signature", sign_hmac_sha256(key, NOW_S, body)),
        ],
    }
}

/// Standard Webhooks headers whose signature header carries seven wrong
/// entries ahead of the right one, the most a header may carry: the cost
/// must stay one MAC over the body, not eight.
fn rotated_headers(key: &SigningKey, body: &[u8]) -> Vec<(&'static str, String)> {
    let wrong = "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= ".repeat(7);
    let mut owned = headers(Scheme::StandardWebhooks, key, body);
    for (name, value) in &mut owned {
        if *name == "webhook-signature" {
            *value = format!("{wrong}{value}");
        }
    }
    owned
}

/// Verifies `body` repeatedly for about `TARGET`; returns (MB/s, µs per call).
fn measure(scheme: Scheme, body: &[u8], rotated: bool) -> (f64, f64) {
    let key = SigningKey::from_secret(scheme.data().key_form(), secret(scheme))
        .expect("bench secret is valid");
    let owned = if rotated {
        rotated_headers(&key, body)
    } else {
        headers(scheme, &key, body)
    };
    let pairs: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = || {
        let verified = verify_one(
            scheme.data(),
            black_box(&key),
            black_box(&pairs[..]),
            black_box(body),
            NOW_S,
            300,
        );
        assert!(verified.is_ok(), "{scheme:?}: {verified:?}");
        black_box(verified).ok();
    };
    // Warm up, and size a chunk of calls to about 10 ms so the clock is
    // read rarely.
    let start = Instant::now();
    let mut warm = 0u64;
    while start.elapsed() < Duration::from_millis(50) {
        run();
        warm += 1;
    }
    let per_call = start.elapsed().as_secs_f64() / warm as f64;
    let chunk = ((0.01 / per_call) as u64).max(1);
    let mut calls = 0u64;
    let start = Instant::now();
    while start.elapsed() < TARGET {
        for _ in 0..chunk {
            run();
        }
        calls += chunk;
    }
    let secs = start.elapsed().as_secs_f64();
    let mb_s = (body.len() as f64 * calls as f64) / secs / 1e6;
    (mb_s, secs / calls as f64 * 1e6)
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument, if any, picks schemes.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    println!("native signature verification (MB = 10^6 bytes; one core)");
    println!(
        "{:<18} {:>8} {:>12} {:>14}",
        "scheme", "body", "MB/s", "µs/verify"
    );
    for scheme in Scheme::ALL {
        if !filter.is_empty() && !filter.iter().any(|f| scheme.as_str().contains(f.as_str())) {
            continue;
        }
        for (label, len) in SIZES {
            let (mb_s, us) = measure(scheme, &body(len), false);
            println!(
                "{:<18} {:>8} {:>12.1} {:>14.2}",
                scheme.as_str(),
                label,
                mb_s,
                us
            );
        }
    }
    let (mb_s, us) = measure(Scheme::StandardWebhooks, &body(1024 * 1024), true);
    println!(
        "{:<18} {:>8} {:>12.1} {:>14.2}",
        "std-webhooks 8 sigs", "1 MiB", mb_s, us
    );
}
