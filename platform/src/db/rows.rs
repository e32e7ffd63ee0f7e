//! What a D1 statement returned, read column by column.
//!
//! worker's `D1Result::results`, `meta` and `first` decode every row through
//! serde_wasm_bindgen: a deserializer per row type, inlined into each
//! caller. The relay reads its rows with [`Rows::map`] instead, a few bytes
//! per column, and `meta.changes` as a plain property; with this and no
//! serde_wasm_bindgen left in it the relay's wasm is 11 KB (gzipped)
//! smaller, measured with twiggy. The DLQ worker's richer listings keep
//! serde ([`Rows::decode`]). Decoding rows through serde_json instead (one
//! `JSON.stringify` per result) measured larger in both workers:
//! serde_json's parser is inlined into every row type.

use crate::outlined::{outlined, Outlined};
use serde::de::DeserializeOwned;
use std::future::Future;
use wasm_bindgen::{JsCast, JsValue};
use worker::d1::serde_wasm_bindgen;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{worker_sys, D1Database, D1PreparedStatement, Result};

/// One statement's result: its rows and its metadata.
pub struct Rows(JsValue);

impl Rows {
    /// Every row, read by `read` column by column.
    pub fn map<T>(&self, mut read: impl FnMut(&Row<'_>) -> Result<T>) -> Result<Vec<T>> {
        let Some(rows) = self.results() else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(rows.length() as usize);
        for row in rows.iter() {
            out.push(read(&Row(&row))?);
        }
        Ok(out)
    }

    /// Every row, decoded as `T` (for the DLQ worker's richer rows; the
    /// relay reads its rows with [`Rows::map`] and links no decoder).
    pub fn decode<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        let Some(rows) = self.results() else {
            return Ok(Vec::new());
        };
        rows.iter()
            .map(|row| Ok(serde_wasm_bindgen::from_value(row)?))
            .collect()
    }

    /// Every row as a JSON object, column name to value exactly as D1 gave
    /// it (a `SELECT *` copied to the archive). Read through one
    /// `JSON.stringify` and serde_json's `Value` parser, which the DLQ
    /// worker links anyway, rather than a serde_wasm_bindgen decoder for
    /// `Value`; integers stay integers.
    pub fn json_objects(&self) -> Result<Vec<serde_json::Map<String, serde_json::Value>>> {
        let Some(rows) = self.results() else {
            return Ok(Vec::new());
        };
        let text = js_sys::JSON::stringify(&rows)?
            .as_string()
            .ok_or_else(|| worker::Error::RustError("D1 rows did not stringify".into()))?;
        Ok(serde_json::from_str(&text)?)
    }

    /// The `results` array as D1 returned it (empty when the answer has
    /// none), for rows handed on to JS untouched
    /// (`archive_bucket::put_rows`).
    pub fn results_array(&self) -> js_sys::Array {
        self.results().unwrap_or_default()
    }

    /// The first row, read by `read`, if there is one.
    pub fn map_first<T>(&self, read: impl FnOnce(&Row<'_>) -> Result<T>) -> Result<Option<T>> {
        match self.results().map(|rows| rows.get(0)) {
            Some(row) if !row.is_undefined() => read(&Row(&row)).map(Some),
            _ => Ok(None),
        }
    }

    /// The first row, decoded as `T`, if there is one.
    pub fn first<T: DeserializeOwned>(&self) -> Result<Option<T>> {
        Ok(self.decode::<T>()?.into_iter().next())
    }

    /// The `results` array, when the answer has one.
    fn results(&self) -> Option<js_sys::Array> {
        property(&self.0, "results").dyn_into().ok()
    }

    /// The database's size after the statement (`meta.size_after`), if the
    /// answer carries it. D1 counts allocated pages, free ones included.
    pub fn size_after(&self) -> Option<u64> {
        property(&property(&self.0, "meta"), "size_after")
            .as_f64()
            .map(|n| n as u64)
    }

    /// Rows a write statement changed (`meta.changes`; 0 when absent).
    pub fn changes(&self) -> usize {
        property(&property(&self.0, "meta"), "changes")
            .as_f64()
            .map_or(0, |n| n as usize)
    }
}

/// One row of a result, as D1 gives it: an object of column values.
pub struct Row<'a>(&'a JsValue);

impl Row<'_> {
    /// A text column that is never NULL.
    pub fn text(&self, column: &str) -> Result<String> {
        self.opt_text(column)?
            .ok_or_else(|| unreadable(column, "text"))
    }

    /// A text column that may be NULL.
    pub fn opt_text(&self, column: &str) -> Result<Option<String>> {
        let v = property(self.0, column);
        if v.is_null_or_undefined() {
            return Ok(None);
        }
        v.as_string()
            .map(Some)
            .ok_or_else(|| unreadable(column, "text"))
    }

    /// An integer column that is never NULL.
    pub fn int(&self, column: &str) -> Result<i64> {
        self.opt_int(column)?
            .ok_or_else(|| unreadable(column, "an integer"))
    }

    /// An integer column that may be NULL. D1 answers numbers as doubles;
    /// every integer hookrelay stores is far below 2^53.
    pub fn opt_int(&self, column: &str) -> Result<Option<i64>> {
        let v = property(self.0, column);
        if v.is_null_or_undefined() {
            return Ok(None);
        }
        v.as_f64()
            .map(|n| Some(n as i64))
            .ok_or_else(|| unreadable(column, "an integer"))
    }
}

#[cold]
fn unreadable(column: &str, what: &str) -> worker::Error {
    worker::Error::RustError(format!(
        "D1 returned a row whose `{column}` is not {what}; apply the migrations in migrations/"
    ))
}

fn property(target: &JsValue, name: &str) -> JsValue {
    if target.is_object() {
        js_sys::Reflect::get(target, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED)
    } else {
        JsValue::UNDEFINED
    }
}

/// `db.batch(statements)`: one round trip, one transaction, a result per
/// statement in order. Awaited through [`outlined`], so its body is in the
/// wasm once rather than inside every caller's state machine.
pub fn batch(
    db: &D1Database,
    statements: Vec<D1PreparedStatement>,
) -> Outlined<impl Future<Output = Result<Vec<Rows>>> + '_> {
    outlined(async move {
        let list: js_sys::Array = statements.iter().map(|s| s.inner().clone()).collect();
        let sys: &worker_sys::D1Database = db.as_ref().unchecked_ref();
        let answer = JsFuture::from(sys.batch(list)?).await.map_err(d1_error)?;
        let answer: js_sys::Array = answer.dyn_into()?;
        Ok(answer.iter().map(Rows).collect())
    })
}

/// Running one statement (a read or a write) on its own: `statement.all()`.
pub trait Query {
    /// Runs the statement; its rows and `meta.changes` are in the answer.
    fn query(&self) -> Outlined<impl Future<Output = Result<Rows>> + '_>;
}

impl Query for D1PreparedStatement {
    fn query(&self) -> Outlined<impl Future<Output = Result<Rows>> + '_> {
        outlined(async move {
            let promise = self.inner().all()?;
            Ok(Rows(JsFuture::from(promise).await.map_err(d1_error)?))
        })
    }
}

/// A rejected D1 call as a worker error whose text keeps D1's own message
/// and its cause, the words the D1 error classifier reads.
fn d1_error(err: JsValue) -> worker::Error {
    let Some(e) = err.dyn_ref::<js_sys::Error>() else {
        return worker::Error::from(err);
    };
    let message = String::from(e.message());
    let cause = e
        .cause()
        .dyn_ref::<js_sys::Error>()
        .map(|c| String::from(c.message()));
    match cause {
        Some(c) if !message.contains(&c) => {
            worker::Error::RustError(format!("{message} (cause: {c})"))
        }
        _ => worker::Error::RustError(message),
    }
}
