//! A bearer token as the CLI holds it: never shown, handed out only to the
//! `Authorization` header and the profile file. A leaf, so that where a
//! token comes from (`target`) and how a development one is minted
//! (`dev_token`) both use it without importing each other.

use std::fmt;

/// A bearer token: shown as `Token(…)` in any debug output, handed out
/// only to the `Authorization` header and the profile file.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Wraps a token's text.
    pub fn new(text: String) -> Token {
        Token(text)
    }

    /// The text, for the one header and the one file that carry it.
    pub fn reveal(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(…)")
    }
}
