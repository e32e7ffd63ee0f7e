//! Hands a replay to the relay through the `RELAY` service binding. Only
//! the relay holds `SOURCES` and the delivery settings, so a replay runs
//! with exactly the configuration the consumer runs with; maintenance runs
//! and the pull destinations' figures are asked of it the same way.

use hookrelay_core::admin::internal_token::mint;
use hookrelay_core::deliver::pull_figures::{
    PullFigures, ANSWER_WITHIN_MS, PATH as PULL_FIGURES_PATH,
};
use hookrelay_core::maintenance::schedule::MAINTENANCE_PATH;
use hookrelay_core::replay::call::{ReplayAnswer, ReplayCall, PATH};
use hookrelay_core::state::error_code::{ErrorCode, Failure};
use hookrelay_platform::{now_ms, post_request};
use worker::{Env, Fetcher, Headers};

/// The relay, as this worker calls it.
pub struct Relay {
    fetcher: Fetcher,
    key: Vec<u8>,
}

impl Relay {
    /// The `RELAY` binding, or why it is missing.
    pub fn from_env(env: &Env, key: &[u8]) -> Result<Relay, String> {
        env.service("RELAY")
            .map(|fetcher| Relay {
                fetcher,
                key: key.to_vec(),
            })
            .map_err(|_| "the RELAY service binding is not configured in dlq/wrangler.toml".into())
    }

    /// Replays one call; a transport problem is an `UNKNOWN` failure that
    /// changes nothing about the event (the relay may retry it later).
    pub async fn replay(&self, call: &ReplayCall) -> ReplayAnswer {
        match self.send(call).await {
            Ok(answer) => answer,
            Err(message) => ReplayAnswer {
                downstream: hookrelay_core::state::DownstreamResult::NotForwarded,
                failure: Some(Failure::new(ErrorCode::Unknown, message)),
                refused: None,
                refusal_code: None,
            },
        }
    }

    async fn send(&self, call: &ReplayCall) -> Result<ReplayAnswer, String> {
        let body = serde_json::to_string(call).map_err(|e| e.to_string())?;
        let text = self.post(PATH, &body, "replay").await?;
        serde_json::from_str(&text).map_err(|e| format!("the relay's answer is unreadable: {e}"))
    }

    /// Runs maintenance (the watchdog and a sweep step) on the relay now:
    /// its answer, or the error code and message of the part that failed
    /// (`WATCHDOG_FAILED`, `MAINTENANCE_FAILED`, as the relay named it;
    /// `UNAVAILABLE` when the relay gave no answer of its own).
    pub async fn maintenance(&self) -> Result<serde_json::Value, (String, String)> {
        self.internal(MAINTENANCE_PATH, "maintenance", None).await
    }

    /// The pull destinations' figures, from the relay (which alone knows
    /// which destinations pull): one line per pull destination, or the
    /// error code and message of why there are none to show (`UNAVAILABLE`
    /// when the relay gave no answer of its own).
    pub async fn pull_figures(&self) -> Result<PullFigures, (String, String)> {
        let within = Some(ANSWER_WITHIN_MS);
        let answer = self
            .internal(PULL_FIGURES_PATH, "pull figures", within)
            .await?;
        serde_json::from_value(answer).map_err(|e| {
            (
                "UNAVAILABLE".to_string(),
                format!("the relay's pull figures are unreadable: {e}"),
            )
        })
    }

    /// POSTs `{}` to the relay's internal route `path`, given up after
    /// `within_ms` if set: its JSON answer on 200, else the error code and
    /// message the relay answered (or `UNAVAILABLE` naming what went
    /// wrong); `what` names the call.
    async fn internal(
        &self,
        path: &str,
        what: &str,
        within_ms: Option<u64>,
    ) -> Result<serde_json::Value, (String, String)> {
        let unavailable = |m: String| ("UNAVAILABLE".to_string(), m);
        let (status, text) = self
            .call_within(path, "{}", &format!("the {what} call"), within_ms)
            .await
            .map_err(unavailable)?;
        let answer: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| unavailable(format!("the relay's answer is unreadable: {e}")))?;
        if status == 200 {
            return Ok(answer);
        }
        let error = &answer["error"];
        match (error["code"].as_str(), error["message"].as_str()) {
            (Some(code), Some(message)) => Err((code.to_string(), message.to_string())),
            _ => Err(unavailable(format!(
                "the relay refused the {what} call ({status}): {}",
                hookrelay_core::support::redact::truncate(&text, 300)
            ))),
        }
    }

    /// POSTs `body` to the relay's internal `path`, token-proven: the
    /// answer's text on 200, else what the relay said.
    async fn post(&self, path: &str, body: &str, what: &str) -> Result<String, String> {
        let (status, text) = self.call(path, body, &format!("the {what} call")).await?;
        if status != 200 {
            return Err(format!(
                "the relay refused the {what} call ({status}): {}",
                hookrelay_core::support::redact::truncate(&text, 300)
            ));
        }
        Ok(text)
    }

    /// POSTs `body` to the relay's internal route `path` with a fresh token:
    /// the relay's status and answer text, or why it did not answer (`what`
    /// names the call in that message).
    pub async fn call(&self, path: &str, body: &str, what: &str) -> Result<(u16, String), String> {
        self.call_within(path, body, what, None).await
    }

    /// [`Relay::call`], given up after `within_ms` when set (the relay's
    /// answer then names the wait).
    async fn call_within(
        &self,
        path: &str,
        body: &str,
        what: &str,
        within_ms: Option<u64>,
    ) -> Result<(u16, String), String> {
        let headers = Headers::new();
        let token = mint(&self.key, now_ms().div_euclid(1000));
        let _ = headers.set("authorization", &format!("Bearer {token}"));
        let _ = headers.set("content-type", "application/json");
        let url = format!("https://hookrelay{path}");
        let request = post_request::post_within(&url, &headers, body, within_ms)
            .map_err(|e| e.to_string())?;
        let waited = within_ms.map_or(String::new(), |ms| format!(" within {ms} ms"));
        let mut response = self
            .fetcher
            .fetch_request(request)
            .await
            .map_err(|e| format!("the relay did not answer {what}{waited}: {e}"))?;
        let text = response.text().await.unwrap_or_default();
        Ok((response.status_code(), text))
    }
}
