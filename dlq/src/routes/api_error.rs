//! One error type for the admin API, mapped to responses in one place:
//! `{"status":"error","error":{"code","message"}}` with the right status.

use crate::jobs::error::JobError;
use hookrelay_core::admin::jwt::AuthError;
use hookrelay_core::support::env::ConfigError;
use hookrelay_platform::db::error_message;
use serde_json::{json, Value};
use worker::{Response, Result};

/// Why an admin request failed.
pub enum ApiError {
    /// 401 or 403.
    Auth(AuthError),
    /// 400: a parameter or body field is wrong.
    BadRequest {
        /// The parameter or field.
        param: String,
        /// What is wrong.
        message: String,
    },
    /// 404.
    NotFound(String),
    /// 405.
    MethodNotAllowed(&'static str),
    /// 409: the entry is not in a state that allows this.
    Conflict(String),
    /// Its own status and stable code: a restore refusal (`AT_CAPACITY`,
    /// …, 409), a replay the relay refused (`DESTINATION_UNKNOWN` 409,
    /// `RATE_LIMITED` 429).
    Refused {
        /// The status.
        status: u16,
        /// The stable code.
        code: &'static str,
        /// What happened and what to do next.
        message: String,
    },
    /// 502: the R2 archive object a restore needs is missing or unreadable;
    /// the message names its key.
    ArchiveUnreadable(String),
    /// 500: the worker is misconfigured.
    Config(ConfigError),
    /// 500: a binding the worker needs (named) is not configured.
    BindingMissing(&'static str),
    /// 503: a D1 call failed (busy, unreachable, a table missing); it keeps
    /// D1's own error, which names the table or statement that failed.
    D1 {
        /// What the call was for.
        what: &'static str,
        /// D1's error.
        source: worker::Error,
    },
    /// 500: D1 answered rows this version cannot read.
    Decode {
        /// What was being read.
        what: &'static str,
        /// The decoder's error.
        source: worker::Error,
    },
    /// 503: something else did not answer (the relay, the jobs queue).
    Unavailable(String),
    /// 503: the relay answered this error (its code and message, passed on).
    Relayed {
        /// The relay's code, e.g. `WATCHDOG_FAILED`.
        code: String,
        /// The relay's message.
        message: String,
    },
}

impl ApiError {
    /// The response for this error.
    pub fn into_response(self) -> Result<Response> {
        let (status, code, message) = match self {
            ApiError::Auth(e) => (e.status(), e.code().to_string(), e.message()),
            ApiError::BadRequest { param, message } => {
                (400, "BAD_REQUEST".into(), format!("{param}: {message}"))
            }
            ApiError::NotFound(m) => (404, "NOT_FOUND".into(), m),
            ApiError::MethodNotAllowed(allow) => {
                (405, "METHOD_NOT_ALLOWED".into(), format!("use {allow}"))
            }
            ApiError::Conflict(m) => (409, "CONFLICT".into(), m),
            ApiError::Refused {
                status,
                code,
                message,
            } => (status, code.into(), message),
            ApiError::ArchiveUnreadable(m) => (502, "ARCHIVE_UNREADABLE".into(), m),
            ApiError::Config(e) => (500, "CONFIG_INVALID".into(), e.to_string()),
            ApiError::BindingMissing(name) => (
                500,
                "BINDING_MISSING".into(),
                format!("the {name} binding is not configured in dlq/wrangler.toml"),
            ),
            ApiError::D1 { what, source } => (
                503,
                "UNAVAILABLE".into(),
                format!(
                    "D1 failed while reading or writing {what}: {}; try again, and if it persists check the D1 database and its migrations",
                    error_message(&source)
                ),
            ),
            ApiError::Decode { what, source } => (
                500,
                "DECODE_FAILED".into(),
                format!(
                    "D1 answered {what} that this version cannot read ({}); apply the migrations in migrations/",
                    error_message(&source)
                ),
            ),
            ApiError::Unavailable(m) => (503, "UNAVAILABLE".into(), m),
            ApiError::Relayed { code, message } => (503, code, message),
        };
        let resp = Response::from_json(
            &json!({"status": "error", "error": {"code": code, "message": message}}),
        )?
        .with_status(status);
        if status == 401 {
            resp.headers().set("WWW-Authenticate", "Bearer")?;
        }
        if status == 503 {
            resp.headers().set("Retry-After", "5")?;
        }
        Ok(resp)
    }
}

/// A failed platform call, kept whole. Rows decoded through
/// `super::batch_reader` are told apart as [`ApiError::Decode`].
impl From<worker::Error> for ApiError {
    fn from(source: worker::Error) -> Self {
        ApiError::D1 {
            what: "the admin data",
            source,
        }
    }
}

impl From<JobError> for ApiError {
    fn from(e: JobError) -> Self {
        match e {
            JobError::NotFound(m) => ApiError::NotFound(m),
            JobError::Conflict(m) => ApiError::Conflict(m),
            JobError::NotQueued(m) => ApiError::Unavailable(m),
            JobError::Storage(e) => e.into(),
        }
    }
}

impl From<hookrelay_core::admin::query::QueryError> for ApiError {
    fn from(e: hookrelay_core::admin::query::QueryError) -> Self {
        ApiError::BadRequest {
            param: e.param,
            message: e.message,
        }
    }
}

impl From<hookrelay_core::replay::plan::BodyError> for ApiError {
    fn from(e: hookrelay_core::replay::plan::BodyError) -> Self {
        ApiError::BadRequest {
            param: e.field,
            message: e.message,
        }
    }
}

/// A success response: `{"status":"success","data":…}`.
pub fn success(data: Value) -> Result<Response> {
    Response::from_json(&json!({"status": "success", "data": data}))
}

/// A success response with another status (`202` for an accepted job).
pub fn success_with_status(data: Value, status: u16) -> Result<Response> {
    Ok(success(data)?.with_status(status))
}

/// The result type of every admin handler.
pub type ApiResult = std::result::Result<Value, ApiError>;
