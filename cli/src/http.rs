//! One relay, over its public HTTP surface: the admin API (its
//! `{"status","data"}` envelope read here once), `/healthz` and
//! `/webhooks/…`. Blocking calls with a timeout, no redirect followed (a
//! token never travels to a second address), and a token sent only in the
//! `Authorization` header, never in a URL, a log or an error.

use crate::failure::Failure;
use crate::target::transport_allows;
use crate::token::Token;
use serde_json::Value;
use std::time::Duration;

/// The relay a command talks to.
pub struct Relay {
    /// Its origin, without a trailing slash.
    pub base: String,
    token: Option<Token>,
    agent: ureq::Agent,
}

/// A POST's answer: the API's `data`.
pub struct Answer {
    /// The envelope's `data`.
    pub data: Value,
}

impl Relay {
    /// A relay at `base`; with a token, only over https or to loopback.
    pub fn new(base: &str, token: Option<Token>) -> Result<Relay, Failure> {
        let base = base.trim_end_matches('/').to_string();
        if token.is_some() {
            transport_allows(&base)?;
        }
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(30))
            .redirects(0)
            .user_agent(concat!("hookrelay-cli/", env!("CARGO_PKG_VERSION")))
            .build();
        Ok(Relay { base, token, agent })
    }

    /// `GET /api/v1/admin/<path>?<query>`: the answer's `data`.
    pub fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Value, Failure> {
        let mut req = self.admin("GET", path);
        for (k, v) in query {
            req = req.query(k, v);
        }
        self.data(req.call()).map(|a| a.data)
    }

    /// `POST /api/v1/admin/<path>` with a JSON body: its `data`.
    pub fn post(&self, path: &str, body: &Value) -> Result<Answer, Failure> {
        let req = self
            .admin("POST", path)
            .set("content-type", "application/json");
        self.data(req.send_string(&body.to_string()))
    }

    /// `POST /api/v1/pull/<destination>`: lease what is due (§4, "Pulling").
    pub fn pull(&self, destination: &str, body: &Value) -> Result<Value, Failure> {
        self.pull_call(destination, "", body)
    }

    /// `POST /api/v1/pull/<destination>/ack`: settle what was pulled.
    pub fn pull_ack(&self, destination: &str, body: &Value) -> Result<Value, Failure> {
        self.pull_call(destination, "/ack", body)
    }

    fn pull_call(&self, destination: &str, tail: &str, body: &Value) -> Result<Value, Failure> {
        let url = format!("{}/api/v1/pull/{destination}{tail}", self.base);
        let mut req = self
            .agent
            .post(&url)
            .set("content-type", "application/json");
        if let Some(t) = &self.token {
            req = req.set("authorization", &format!("Bearer {}", t.reveal()));
        }
        self.data(req.send_string(&body.to_string()))
            .map(|a| a.data)
            .map_err(|f| match f.what.contains("request (404)") {
                true => Failure::failed(
                    f.what,
                    format!("is {destination} a pull destination? `hookrelay config check` lists the destinations and their kinds"),
                ),
                false => f,
            })
    }

    /// A request to a path outside the admin API, without the token
    /// (`/healthz`, `/webhooks/…`): its status and body text, whatever the
    /// status.
    pub fn public(
        &self,
        method: &str,
        path: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<(u16, String), Failure> {
        let mut req = self.agent.request(method, &format!("{}{path}", self.base));
        for (k, v) in headers {
            req = req.set(k, v);
        }
        let res = match if method == "GET" {
            req.call()
        } else {
            req.send_bytes(body)
        } {
            Ok(r) | Err(ureq::Error::Status(_, r)) => r,
            Err(ureq::Error::Transport(t)) => return Err(unreachable_relay(&self.base, &t)),
        };
        let status = res.status();
        Ok((status, res.into_string().unwrap_or_default()))
    }

    fn admin(&self, method: &str, path: &str) -> ureq::Request {
        let req = self
            .agent
            .request(method, &format!("{}/api/v1/admin/{path}", self.base));
        match &self.token {
            Some(t) => req.set("authorization", &format!("Bearer {}", t.reveal())),
            None => req,
        }
    }

    /// The envelope's `data`, or the error it carries, worded for the
    /// operator with what to do next.
    fn data(&self, res: Result<ureq::Response, ureq::Error>) -> Result<Answer, Failure> {
        let res = match res {
            Ok(r) => r,
            Err(ureq::Error::Status(status, r)) => {
                let body = r.into_string().unwrap_or_default();
                return Err(refusal(&self.base, status, &body));
            }
            Err(ureq::Error::Transport(t)) => return Err(unreachable_relay(&self.base, &t)),
        };
        let status = res.status();
        if (300..400).contains(&status) {
            let to = res
                .header("location")
                .unwrap_or("(no Location)")
                .to_string();
            return Err(Failure::failed(
                format!("{} answered a redirect ({status}) to {to}", self.base),
                "point --url at the address it redirects to: a token never follows a redirect",
            ));
        }
        let body = res.into_string().unwrap_or_default();
        let envelope: Value = serde_json::from_str(&body).map_err(|_| not_the_api(&self.base))?;
        match envelope.get("data") {
            Some(data) if envelope["status"] == "success" => Ok(Answer { data: data.clone() }),
            _ => Err(not_the_api(&self.base)),
        }
    }
}

fn not_the_api(base: &str) -> Failure {
    Failure::failed(
        format!("{base} did not answer as a hookrelay admin API"),
        "check --url: it is the relay's origin (the admin API is under /api/v1/admin/)",
    )
}

fn unreachable_relay(base: &str, err: &ureq::Transport) -> Failure {
    Failure::failed(
        format!("cannot reach {base}: {err}"),
        "is the relay running? start one with `npm start`, or point at yours with --url (or HOOKRELAY_URL)",
    )
}

/// Whether a failure may pass by itself: the relay unreachable, or an
/// answer of 5xx (a restart, D1 briefly away).
pub fn is_transient(f: &Failure) -> bool {
    f.what.starts_with("cannot reach ") || f.what.starts_with("the relay refused the request (5")
}

/// An error answer, as the admin API words it, with what to do next.
pub fn refusal(base: &str, status: u16, body: &str) -> Failure {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| v["error"]["message"].as_str())
        .map(String::from)
        .unwrap_or_else(|| {
            format!(
                "HTTP {status}: {}",
                body.chars().take(200).collect::<String>()
            )
        });
    let what = format!("the relay refused the request ({status}): {message}");
    match status {
        400 => Failure::usage(what, "fix the value it names; `hookrelay <command> --help` lists each flag's forms"),
        401 => Failure::failed(what, format!("log in again with `hookrelay login --url {base}`, or give a current token with HOOKRELAY_TOKEN or --token-file")),
        403 => Failure::failed(what, "use an admin token (`hookrelay token --sub <you>` mints one from ADMIN_JWT_SECRET)"),
        404 => Failure::failed(what, "check the id: `hookrelay dlq list`, `hookrelay jobs list` and `hookrelay events list` show them"),
        409 => Failure::failed(what, "its status does not allow that now; `hookrelay dlq show <id>` lists the actions it allows"),
        429 => Failure::failed(what, "wait and try again (the answer's Retry-After says how long)"),
        _ => Failure::failed(what, "try again; if it persists, read the relay's logs (`npx wrangler tail`)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_answer_is_worded_with_its_message_and_a_next_step() {
        let body = r#"{"status":"error","error":{"code":"BAD_REQUEST","message":"since: is after until"}}"#;
        let f = refusal("http://127.0.0.1:8787", 400, body);
        assert_eq!(f.exit_code(), 2);
        assert!(f.what.contains("since: is after until"), "{}", f.what);
        let f = refusal("https://relay.example", 401, "not json");
        assert_eq!(f.exit_code(), 1);
        assert!(
            f.what.contains("HTTP 401: not json")
                && f.next
                    .contains("hookrelay login --url https://relay.example")
        );
        for status in [403, 404, 409, 429, 500, 503] {
            assert!(!refusal("x", status, "").next.is_empty(), "{status}");
            assert_eq!(
                is_transient(&refusal("x", status, "")),
                status >= 500,
                "{status}"
            );
        }
    }

    #[test]
    fn a_token_is_refused_over_plain_http_to_another_host() {
        let token = || Some(Token::new("t".into()));
        assert!(Relay::new("http://relay.example.com", token()).is_err());
        assert!(Relay::new("https://relay.example.com/", token()).is_ok());
        assert!(Relay::new("http://127.0.0.1:8787", token()).is_ok());
        assert!(Relay::new("http://relay.example.com", None).is_ok());
    }
}
