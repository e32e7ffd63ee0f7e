//! `hookrelay listen <port or URL> --destination <pull destination>
//! [--path <p>]`: webhooks on a laptop without a tunnel (DESIGN §8). It
//! pulls the destination's deliveries from the relay (§4, "Pulling"), POSTs
//! each to the local target with its content type and original headers
//! (less hop-by-hop and redacted ones) plus `X-Hookrelay-Delivery-Id` and
//! the idempotency key, prints one line per delivery, and acks each
//! outcome. One delivery at a time by default (`--concurrency`). Its local
//! call times out before the lease ends, so a slow target never outlives
//! the lease it was handed. While the target refuses connections it does
//! not pull, so a closed laptop spends no attempts; what it could not
//! forward is retried by the relay on its schedule, dead-lettered after six
//! attempts and replayable, never lost. Ctrl-C or SIGTERM finish the
//! delivery in hand, ack it, and stop with exit 0.

use super::connect;
use crate::args::{Global, ListenArgs};
use crate::clock::now_ms;
use crate::failure::{Done, Failure, Outcome};
use crate::http::{is_transient, Relay};
use crate::show::instant;
use hookrelay_core::support::redact::REDACTED;
use serde_json::{json, Value};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long before its lease ends a local call gives up: the ack must
/// still reach the relay while the lease is ours.
const LEASE_MARGIN_MS: i64 = 3_000;
/// The longest a local call waits, however long the lease.
const MAX_CALL_MS: i64 = 60_000;
/// Polls when nothing is due: at least this often…
const MAX_IDLE_WAIT_MS: i64 = 2_000;
/// …and never faster than this.
const MIN_IDLE_WAIT_MS: i64 = 200;

/// Headers never forwarded: hop-by-hop ones (RFC 9110 §7.6.1), those the
/// HTTP client writes itself, and those `listen` sets.
const DROPPED: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
    "content-type",
    "x-hookrelay-delivery-id",
    "x-idempotency-key",
];

pub fn run(g: &Global, a: &ListenArgs) -> Outcome {
    if !(1..=10).contains(&a.concurrency) {
        return Err(Failure::usage(
            format!("--concurrency {} is out of bounds", a.concurrency),
            "give 1 to 10 deliveries forwarded at once",
        ));
    }
    let target = local_target(&a.target, &a.path)?;
    let listener = Listener {
        addr: socket_of(&target)?,
        target,
        relay: connect(g)?,
        // No redirect followed: a delivery goes to the target it was told, once.
        local: ureq::AgentBuilder::new().redirects(0).build(),
        destination: a.destination.clone(),
        concurrency: a.concurrency,
        json: g.json,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst)).map_err(|e| {
        Failure::failed(
            format!("cannot watch for Ctrl-C: {e}"),
            "run it again; if it persists, report it",
        )
    })?;
    eprintln!(
        "forwarding {}'s deliveries from {} to {} (Ctrl-C to stop)",
        listener.destination, listener.relay.base, listener.target
    );
    let mut refused = false;
    while !stop.load(Ordering::SeqCst) {
        if !accepts(&listener.addr) {
            if !refused {
                eprintln!(
                    "{} refuses connections: not pulling until it accepts",
                    listener.target
                );
                refused = true;
            }
            pause(&stop, Duration::from_secs(1));
            continue;
        }
        if std::mem::take(&mut refused) {
            eprintln!("{} accepts connections again: pulling", listener.target);
        }
        let wait = listener.round(&stop)?;
        pause(&stop, wait);
    }
    Ok(Done::Ok)
}

/// One `listen`: where from, where to, how.
struct Listener {
    relay: Relay,
    local: ureq::Agent,
    target: String,
    addr: SocketAddr,
    destination: String,
    concurrency: u32,
    json: bool,
}

impl Listener {
    /// One pull, its deliveries forwarded and acked; how long to wait
    /// before the next (none while deliveries keep coming).
    fn round(&self, stop: &AtomicBool) -> Result<Duration, Failure> {
        let page = match self
            .relay
            .pull(&self.destination, &json!({ "max": self.concurrency }))
        {
            Ok(page) => page,
            Err(f) if is_transient(&f) => {
                eprintln!("{}; trying again", f.what);
                return Ok(Duration::from_secs(2));
            }
            Err(f) => return Err(f),
        };
        let items = page["items"].as_array().cloned().unwrap_or_default();
        if items.is_empty() {
            let wait = idle_wait(page["next_due_in_ms"].as_i64());
            return Ok(Duration::from_millis(wait.unsigned_abs()));
        }
        // One at a time, or up to --concurrency side by side.
        let results: Vec<Forwarded> = std::thread::scope(|s| {
            let handles: Vec<_> = items
                .iter()
                .map(|item| s.spawn(|| forward(self, item, stop)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(Forwarded::LeaseLost))
                .collect()
        });
        let mut acked = Vec::new();
        let mut acks = Vec::new();
        for (item, r) in items.iter().zip(&results) {
            if !self.json {
                println!("{}", line(item, r));
            }
            if let Some(ack) = r.ack(item) {
                acked.push(item);
                acks.push(ack);
            }
        }
        if !acks.is_empty() {
            self.ack(&acked, acks)?;
        }
        Ok(Duration::ZERO)
    }

    /// Acks what was forwarded and says what the relay made of each.
    fn ack(&self, acked: &[&Value], acks: Vec<Value>) -> Result<(), Failure> {
        let settled = match self
            .relay
            .pull_ack(&self.destination, &json!({ "results": acks }))
        {
            Ok(v) => v,
            // The lease runs out and the relay retries it; nothing is lost.
            Err(f) if is_transient(&f) => {
                eprintln!(
                    "{}; the relay retries what could not be acked when its lease ends",
                    f.what
                );
                return Ok(());
            }
            Err(f) => return Err(f),
        };
        for (item, state) in acked.iter().zip(answers(&settled)) {
            if self.json {
                println!(
                    "{}",
                    json!({ "delivery": item_summary(item), "ack": state })
                );
            } else if state["state"] != "delivered" {
                eprintln!(
                    "  {}: {}",
                    item["delivery_id"].as_str().unwrap_or("?"),
                    said(&state)
                );
            }
        }
        Ok(())
    }
}

/// How a local call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forwarded {
    /// The target answered this status after `ms`; `retry_after_s` from its
    /// `Retry-After`, when it gave seconds.
    Answered {
        status: u16,
        ms: u64,
        retry_after_s: Option<u64>,
    },
    /// No answer: what went wrong, and after how long.
    NoAnswer { error: String, ms: u64 },
    /// The lease ran out before the target could be called (it refused
    /// connections until then): nothing to ack, the relay retries it.
    LeaseLost,
}

impl Forwarded {
    /// The ack for `item`, or none when there is nothing to say.
    fn ack(&self, item: &Value) -> Option<Value> {
        let mut ack = json!({ "delivery_id": item["delivery_id"], "lease_id": item["lease_id"] });
        match self {
            Forwarded::Answered {
                status,
                retry_after_s,
                ..
            } => {
                ack["status"] = json!(status);
                if let Some(s) = retry_after_s {
                    ack["retry_after_s"] = json!(s);
                }
            }
            Forwarded::NoAnswer { error, .. } => {
                ack["status"] = json!(0);
                ack["error"] = json!(error);
            }
            Forwarded::LeaseLost => return None,
        }
        Some(ack)
    }
}

/// POSTs one pulled delivery to the target, within its lease.
fn forward(l: &Listener, item: &Value, stop: &AtomicBool) -> Forwarded {
    let lease_until = item["lease_until"].as_i64().unwrap_or(0);
    loop {
        let budget = call_budget_ms(lease_until, now_ms());
        if budget <= 0 {
            return Forwarded::LeaseLost;
        }
        let started = Instant::now();
        let ms = || u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match request(l, item, budget).send_string(item["body"].as_str().unwrap_or("")) {
            Ok(res) | Err(ureq::Error::Status(_, res)) => {
                let status = res.status();
                let retry_after_s = res
                    .header("retry-after")
                    .and_then(|v| v.trim().parse().ok());
                // Read the answer so the connection is free for the next one.
                let _ = res.into_string();
                return Forwarded::Answered {
                    status,
                    ms: ms(),
                    retry_after_s,
                };
            }
            Err(ureq::Error::Transport(t)) if t.kind() == ureq::ErrorKind::ConnectionFailed => {
                // The target went away after the pull: wait for it while the
                // lease lasts, rather than spend an attempt on a closed laptop.
                eprintln!("{} refuses connections: holding this delivery until it accepts or its lease ends", l.target);
                while !accepts(&l.addr) && call_budget_ms(lease_until, now_ms()) > 0 {
                    if stop.load(Ordering::SeqCst) {
                        return Forwarded::LeaseLost;
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
            Err(ureq::Error::Transport(t)) => {
                let timed_out = i64::try_from(ms()).unwrap_or(i64::MAX) >= budget - 50;
                let error = match timed_out {
                    true => format!("no answer from {} within {budget} ms", l.target),
                    false => format!("{}: {}", l.target, t.kind()),
                };
                return Forwarded::NoAnswer { error, ms: ms() };
            }
        }
    }
}

/// The local request for one delivery: its content type, its forwarded
/// headers, its delivery id and key, and a timeout of `budget_ms`.
fn request(l: &Listener, item: &Value, budget_ms: i64) -> ureq::Request {
    let content_type = item["content_type"]
        .as_str()
        .unwrap_or("application/octet-stream");
    let mut req = l
        .local
        .post(&l.target)
        .timeout(Duration::from_millis(budget_ms.unsigned_abs()))
        .set("content-type", content_type)
        .set(
            "x-hookrelay-delivery-id",
            item["delivery_id"].as_str().unwrap_or(""),
        )
        .set("x-idempotency-key", item["key"].as_str().unwrap_or(""));
    for (name, value) in forwarded_headers(&item["headers"]) {
        req = req.set(&name, &value);
    }
    req
}

/// How long a local call may take now: until the lease's end less the
/// margin the ack needs, and never more than a minute.
pub fn call_budget_ms(lease_until_ms: i64, now_ms: i64) -> i64 {
    (lease_until_ms - LEASE_MARGIN_MS - now_ms).min(MAX_CALL_MS)
}

/// How long to wait when nothing is due: until the next delivery is, within bounds.
pub fn idle_wait(next_due_in_ms: Option<i64>) -> i64 {
    next_due_in_ms
        .unwrap_or(MAX_IDLE_WAIT_MS)
        .clamp(MIN_IDLE_WAIT_MS, MAX_IDLE_WAIT_MS)
}

/// The delivery's original headers that go on to the target: not
/// hop-by-hop, not ones `listen` sets, and never a redacted one.
pub fn forwarded_headers(headers: &Value) -> Vec<(String, String)> {
    let Some(map) = headers.as_object() else {
        return Vec::new();
    };
    map.iter()
        .filter_map(|(name, value)| {
            let name = name.to_ascii_lowercase();
            let value = value.as_str()?;
            (!DROPPED.contains(&name.as_str()) && value != REDACTED)
                .then(|| (name, value.to_string()))
        })
        .collect()
}

/// The target's URL: a port is loopback's, a URL is taken as given; `path`
/// replaces the URL's path when given.
pub fn local_target(target: &str, path: &Option<String>) -> Result<String, Failure> {
    let base = match target.parse::<u16>() {
        Ok(0) => {
            return Err(Failure::usage(
                "port 0 is not a port",
                "give the port your server listens on, e.g. 3000",
            ))
        }
        Ok(port) => format!("http://127.0.0.1:{port}/"),
        Err(_) => target.to_string(),
    };
    let mut url = url::Url::parse(&base).map_err(|_| {
        Failure::usage(
            format!("{target:?} is neither a port nor a URL"),
            "give a port (3000) or a URL (http://127.0.0.1:3000/hooks)",
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(Failure::usage(
            format!("{target} is not an http(s) URL"),
            "give a port (3000) or a URL (http://127.0.0.1:3000/hooks)",
        ));
    }
    if let Some(p) = path {
        if !p.starts_with('/') {
            return Err(Failure::usage(
                format!("--path {p:?} does not start with /"),
                "give a path such as /webhooks",
            ));
        }
        url.set_path(p);
    }
    Ok(url.to_string())
}

/// The address to probe for the target's URL.
fn socket_of(target: &str) -> Result<SocketAddr, Failure> {
    let url = url::Url::parse(target)
        .map_err(|_| Failure::usage(format!("{target} is not a URL"), "give a port or a URL"))?;
    let host = url
        .host_str()
        .unwrap_or("127.0.0.1")
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = url.port_or_known_default().unwrap_or(80);
    (host.as_str(), port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            Failure::usage(
                format!("cannot resolve {host}"),
                "check the target's host name",
            )
        })
}

/// Whether something accepts connections at `addr` now.
fn accepts(addr: &SocketAddr) -> bool {
    TcpStream::connect_timeout(addr, Duration::from_millis(500)).is_ok()
}

/// Sleeps `d`, waking early when asked to stop.
fn pause(stop: &AtomicBool, d: Duration) {
    let until = Instant::now() + d;
    while !stop.load(Ordering::SeqCst) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One delivery as a line: time, outcome, milliseconds, ids, source.
fn line(item: &Value, r: &Forwarded) -> String {
    let (outcome, ms) = match r {
        Forwarded::Answered { status, ms, .. } => (status.to_string(), format!("{ms} ms")),
        Forwarded::NoAnswer { error, ms } => (format!("ERR {error}"), format!("{ms} ms")),
        Forwarded::LeaseLost => (
            "lease ran out before the target accepted".into(),
            "-".into(),
        ),
    };
    format!(
        "{}  {outcome}  {ms}  {}  {}  attempt {}  {}",
        instant(now_ms()),
        item["event_id"].as_str().unwrap_or("?"),
        item["source"].as_str().unwrap_or("?"),
        item["attempt"].as_i64().unwrap_or(0),
        item["key"].as_str().unwrap_or("?"),
    )
}

/// What `--json` prints of a pulled delivery: its ids, never its body.
fn item_summary(item: &Value) -> Value {
    json!({
        "delivery_id": item["delivery_id"],
        "event_id": item["event_id"],
        "key": item["key"],
        "source": item["source"],
        "attempt": item["attempt"],
    })
}

/// The ack answer's states, in the order acked.
fn answers(settled: &Value) -> Vec<Value> {
    settled["results"].as_array().cloned().unwrap_or_default()
}

/// An ack's state in words.
fn said(state: &Value) -> String {
    match state["state"].as_str().unwrap_or("?") {
        "pending" => match state["due_at"].as_i64() {
            Some(due) => format!("the relay retries it at {}", instant(due)),
            None => "the relay retries it".into(),
        },
        "dead_lettered" => "dead-lettered after its sixth attempt: `hookrelay dlq list` shows it, `hookrelay dlq replay <id>` sends it again".into(),
        "lease_expired" => "its lease had ended: the relay retries it".into(),
        "unknown" => "the relay does not know this delivery".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_is_loopback_and_a_url_is_taken_with_its_path_replaced_by_path() {
        for (target, path, want) in [
            ("3000", None, "http://127.0.0.1:3000/"),
            ("3000", Some("/hooks"), "http://127.0.0.1:3000/hooks"),
            ("http://localhost:8080/in", None, "http://localhost:8080/in"),
            (
                "http://localhost:8080/in",
                Some("/other"),
                "http://localhost:8080/other",
            ),
        ] {
            assert_eq!(
                local_target(target, &path.map(String::from)).unwrap(),
                want,
                "{target} {path:?}"
            );
        }
        for (target, path) in [
            ("0", None),
            ("ftp://x/", None),
            ("not a url", None),
            ("3000", Some("hooks")),
        ] {
            assert_eq!(
                local_target(target, &path.map(String::from))
                    .unwrap_err()
                    .exit_code(),
                2,
                "{target}"
            );
        }
    }

    #[test]
    fn a_local_call_ends_before_its_lease_with_room_for_the_ack() {
        assert_eq!(call_budget_ms(100_000, 30_000), MAX_CALL_MS);
        assert_eq!(call_budget_ms(100_000, 90_000), 7_000);
        assert!(call_budget_ms(100_000, 97_500) <= 0, "too late: no call");
    }

    #[test]
    fn idle_polls_follow_the_next_due_within_bounds() {
        assert_eq!(idle_wait(None), MAX_IDLE_WAIT_MS);
        assert_eq!(idle_wait(Some(0)), MIN_IDLE_WAIT_MS);
        assert_eq!(idle_wait(Some(700)), 700);
        assert_eq!(idle_wait(Some(30_000)), MAX_IDLE_WAIT_MS);
    }

    #[test]
    fn hop_by_hop_redacted_and_own_headers_are_not_forwarded() {
        let headers = json!({
            "Content-Type": "application/json", "connection": "keep-alive", "transfer-encoding": "chunked",
            "stripe-signature": REDACTED, "x-github-event": "push", "user-agent": "GitHub-Hookshot/1",
            "x-idempotency-key": "forged", "host": "relay.example",
        });
        let mut got = forwarded_headers(&headers);
        got.sort();
        assert_eq!(
            got,
            vec![
                ("user-agent".into(), "GitHub-Hookshot/1".into()),
                ("x-github-event".into(), "push".into())
            ]
        );
    }

    #[test]
    fn each_outcome_acks_as_the_relay_reads_it() {
        let item = json!({"delivery_id": "d1", "lease_id": "l1"});
        let ok = Forwarded::Answered {
            status: 200,
            ms: 5,
            retry_after_s: None,
        }
        .ack(&item)
        .unwrap();
        assert_eq!(
            ok,
            json!({"delivery_id": "d1", "lease_id": "l1", "status": 200})
        );
        let busy = Forwarded::Answered {
            status: 503,
            ms: 5,
            retry_after_s: Some(30),
        }
        .ack(&item)
        .unwrap();
        assert_eq!(busy["retry_after_s"], 30);
        let none = Forwarded::NoAnswer {
            error: "no answer".into(),
            ms: 9,
        }
        .ack(&item)
        .unwrap();
        assert_eq!(
            (none["status"].clone(), none["error"].clone()),
            (json!(0), json!("no answer"))
        );
        assert_eq!(Forwarded::LeaseLost.ack(&item), None);
    }
}
