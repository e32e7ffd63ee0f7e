//! `POST /internal/v1/pull-figures`: the pull destinations' figures for the
//! DLQ worker's stats (DESIGN §3: "the stats show per pull destination the
//! deliveries waiting, leased, and the oldest due age"). Answered here
//! because only the relay holds `DESTINATIONS`, so only it knows which names
//! pull, a never-pulled one included; the lines are the core's
//! (`deliver::pull_figures`). The caller is proven like a replay
//! (`internal_auth`); the body, if any, must be an empty JSON object.

use crate::routes::{internal_auth, responses};
use hookrelay_core::deliver::pull_figures::{self, PullFigures};
use hookrelay_core::metrics::Component;
use hookrelay_platform::db::{self, deliveries, error_message};
use hookrelay_platform::{log, now_ms};
use worker::{Env, Request, Response, Result};

/// Handles one figures call: the figures, or a 503 naming D1.
pub async fn handle(mut req: Request, env: &Env) -> Result<Response> {
    let admitted = match internal_auth::admit(&req, env, "pull figure reads").await {
        Ok(a) => a,
        Err(answer) => return answer,
    };
    let text = req.text().await.unwrap_or_default();
    if !text.trim().is_empty() && serde_json::from_str::<EmptyBody>(&text).is_err() {
        return responses::error(400, "BAD_REQUEST", "the pull figures call takes no fields");
    }
    if hookrelay_platform::test_faults::armed(env, "pull_figures_hang") {
        // A hung relay, for the stats' wait to end (test-only).
        worker::Delay::from(std::time::Duration::from_secs(30)).await;
    }
    let pulls = admitted.config().delivery.pull_names();
    match read(env, &pulls, now_ms()).await {
        Ok(figures) => Response::from_json(&figures),
        Err(e) => {
            let err = error_message(&e);
            log::error(
                Component::Relay,
                "pull_figures_failed",
                log::fields! {"err": err},
            );
            responses::error(
                503,
                "D1_UNAVAILABLE",
                &format!("D1 failed while reading the pull destinations' figures: {err}"),
            )
        }
    }
}

/// One D1 batch: the waiting and the leased deliveries of every pull
/// destination, joined by the core into one line each.
async fn read(env: &Env, pulls: &[String], now: i64) -> worker::Result<PullFigures> {
    if pulls.is_empty() {
        return Ok(pull_figures::figures(pulls, &[], &[], now));
    }
    let d1 = env.d1("DB")?;
    let answers = db::batch(
        &d1,
        vec![
            deliveries::pull_waiting_figures(&d1, pulls, now)?,
            deliveries::pull_leased_figures(&d1, pulls)?,
        ],
    )
    .await?;
    let [waiting, leased] = answers.as_slice() else {
        return Err(worker::Error::RustError(format!(
            "D1 answered {} result sets for the pull figures' 2 reads",
            answers.len()
        )));
    };
    let waiting = deliveries::read_pull_waiting_figures(waiting)?;
    let leased = deliveries::read_pull_leased_figures(leased)?;
    Ok(pull_figures::figures(pulls, &waiting, &leased, now))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EmptyBody {}
