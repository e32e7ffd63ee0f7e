//! One alert POSTed to `ALERT_WEBHOOK_URL`, signed like a downstream
//! delivery (`core::alarms::alert_payload`), within `ALERT_TIMEOUT`.
//! Nothing here ever writes the URL (a secret) into an error, a log or an
//! answer.

use hookrelay_core::alarms::alert_payload::Alert;
use hookrelay_core::config::RelayConfig;
use hookrelay_core::metrics::{Component, Metric, MetricName};
use hookrelay_core::state::error_code::ErrorCode;
use hookrelay_platform::{downstream, log, metrics};

/// How the receiver answered one alert.
pub struct Posted {
    /// Its HTTP status, when it answered at all.
    pub status: Option<u16>,
    /// `Ok` for a 2xx; otherwise what went wrong, in words without secrets.
    pub result: Result<(), String>,
}

/// POSTs `alert` at `now_ms`. Without a receiver or a signing key it sends
/// nothing and says which setting is missing.
pub async fn send(cfg: &RelayConfig, alert: &Alert, now_ms: i64) -> Posted {
    let posted = post(cfg, alert, now_ms).await;
    if let Err(e) = &posted.result {
        metrics::count(
            Metric::new(MetricName::AlertFailed, Component::Watchdog)
                .detail(alert.id.kind.as_str()),
            1,
        );
        log::warn(
            Component::Watchdog,
            "alert_failed",
            log::fields! {"alarm": alert.id.to_string(), "state": alert.state.as_str(), "err": e.as_str(), "next": "retry on the next run"},
        );
    }
    posted
}

async fn post(cfg: &RelayConfig, alert: &Alert, now_ms: i64) -> Posted {
    let refused = |why: &str| Posted {
        status: None,
        result: Err(why.to_string()),
    };
    let Some(url) = &cfg.alarms.webhook_url else {
        return refused("ALERT_WEBHOOK_URL is not set");
    };
    let Some(key) = &cfg.delivery.signing_key else {
        return refused("DOWNSTREAM_SIGNING_SECRET is not set; alerts are signed with it");
    };
    let body = alert.body();
    let mut headers: Vec<(&str, String)> = alert
        .headers(key, now_ms.div_euclid(1000), body.as_bytes())
        .into_iter()
        .collect();
    headers.push(("content-type", "application/json".into()));
    let timeout_ms = cfg.alarms.alert_timeout_ms.max(1) as u64;
    let (status, result) =
        downstream::post_answered(url.expose(), &headers, &body, timeout_ms, now_ms).await;
    Posted {
        status,
        // A network error's text may quote the URL; it never leaves here.
        result: result.map_err(|f| {
            let message = match f.code {
                ErrorCode::Timeout => {
                    format!("the receiver did not answer within {timeout_ms} ms (ALERT_TIMEOUT)")
                }
                _ => f.message,
            };
            format!("{}: {message}", f.code.as_str()).replace(url.expose(), "<ALERT_WEBHOOK_URL>")
        }),
    }
}
