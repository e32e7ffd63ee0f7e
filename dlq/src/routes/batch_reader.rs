//! A D1 batch read by typed slots instead of by position: each statement is
//! added with a name and the row type it answers, and reading a slot
//! returns its rows or an error naming it. A failed read is an error, never
//! an empty list.

use super::ApiError;
use hookrelay_platform::db::Rows;
use serde::de::DeserializeOwned;
use std::marker::PhantomData;
use worker::{D1Database, D1PreparedStatement};

/// The statements of one batch, with what each one reads.
pub struct Batch {
    what: &'static str,
    names: Vec<&'static str>,
    statements: Vec<D1PreparedStatement>,
}

/// Where one statement's rows of type `T` are in the batch's answer.
pub struct Slot<T> {
    index: usize,
    row: PhantomData<fn() -> T>,
}

/// The answer of a [`Batch`].
pub struct Answer {
    names: Vec<&'static str>,
    results: Vec<Rows>,
}

impl Batch {
    /// An empty batch reading `what` (named in a D1 failure).
    pub fn new(what: &'static str) -> Batch {
        Batch {
            what,
            names: Vec::new(),
            statements: Vec::new(),
        }
    }

    /// Adds a statement whose rows are `T`s, named `name` in a decode error.
    pub fn add<T>(&mut self, name: &'static str, statement: D1PreparedStatement) -> Slot<T> {
        self.names.push(name);
        self.statements.push(statement);
        Slot {
            index: self.statements.len() - 1,
            row: PhantomData,
        }
    }

    /// Runs every statement in one round trip (one transaction).
    pub async fn run(self, db: &D1Database) -> Result<Answer, ApiError> {
        let asked = self.statements.len();
        let results = hookrelay_platform::db::batch(db, self.statements)
            .await
            .map_err(|source| ApiError::D1 {
                what: self.what,
                source,
            })?;
        if results.len() != asked {
            return Err(ApiError::Unavailable(format!(
                "D1 answered {} results for the {asked} statements of {}; try again",
                results.len(),
                self.what
            )));
        }
        Ok(Answer {
            names: self.names,
            results,
        })
    }
}

impl Answer {
    /// Every row of `slot`, or a decode error naming it.
    pub fn rows<T: DeserializeOwned>(&self, slot: &Slot<T>) -> Result<Vec<T>, ApiError> {
        self.results
            .get(slot.index)
            .expect("a slot indexes its own batch, answered one result per statement")
            .decode::<T>()
            .map_err(|source| ApiError::Decode {
                what: self.names[slot.index],
                source,
            })
    }

    /// The database's size as the batch's last statement saw it
    /// (`meta.size_after`), if D1 answered it.
    pub fn size_after(&self) -> Option<u64> {
        self.results.last().and_then(Rows::size_after)
    }

    /// The first row of `slot`, if there is one.
    pub fn first<T: DeserializeOwned>(&self, slot: &Slot<T>) -> Result<Option<T>, ApiError> {
        Ok(self.rows(slot)?.into_iter().next())
    }
}
