//! A WHERE clause built from optional filters, with numbered parameters.
//! Filters are bound parameters, never interpolated text; only the fixed
//! column names the table modules pass appear in the SQL.

use super::{int, text};
use wasm_bindgen::JsValue;

/// Clauses joined with AND, and their parameters in order.
#[derive(Default)]
pub struct Where {
    clauses: Vec<String>,
    /// The bound values, `?1` first.
    pub params: Vec<JsValue>,
}

impl Where {
    /// Binds a value and answers its placeholder.
    pub fn bind(&mut self, value: JsValue) -> String {
        self.params.push(value);
        format!("?{}", self.params.len())
    }

    /// `column = value`, when a value is given.
    pub fn eq(&mut self, column: &str, value: Option<&str>) -> &mut Self {
        if let Some(v) = value {
            let p = self.bind(text(v));
            self.clauses.push(format!("{column} = {p}"));
        }
        self
    }

    /// `column <op> value` for an integer, when a value is given.
    pub fn cmp_int(&mut self, column: &str, op: &str, value: Option<i64>) -> &mut Self {
        if let Some(v) = value {
            let p = self.bind(int(v));
            self.clauses.push(format!("{column} {op} {p}"));
        }
        self
    }

    /// A keyset position: `(time_col, id_col) <op> (at, id)`.
    pub fn after(&mut self, columns: &str, op: &str, at_ms: i64, id: JsValue) -> &mut Self {
        let at = self.bind(int(at_ms));
        let id = self.bind(id);
        self.clauses.push(format!("({columns}) {op} ({at}, {id})"));
        self
    }

    /// The clause text and the placeholder of `LIMIT limit + 1` (the extra
    /// row says whether there is a next page).
    pub fn finish(&mut self, limit: u32) -> (String, String) {
        let limit = self.bind(int(i64::from(limit) + 1));
        (self.clause(), limit)
    }

    /// The clause text alone (empty when there is no filter).
    pub fn clause(&self) -> String {
        if self.clauses.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", self.clauses.join(" AND "))
        }
    }
}
