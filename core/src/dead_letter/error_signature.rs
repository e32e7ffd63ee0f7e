//! Error signatures: a stable hash of a failure's code and its message
//! with the variable parts (numbers, ids, quoted values) normalized away,
//! so dead letters that failed the same way group together.

use crate::state::error_code::ErrorCode;
use sha2::{Digest, Sha256};

/// A stable grouping hash of a code and a message with its variable parts
/// (numbers, hex ids, quoted values) normalized away: `sig_` and 16 hex.
pub fn error_signature(code: ErrorCode, message: &str) -> String {
    let normalized = normalize_message(message);
    let digest = Sha256::digest(format!("{}|{}", code.as_str(), normalized).as_bytes());
    format!("sig_{}", &hex::encode(digest)[..16])
}

/// Lower-cases, replaces quoted strings with `?` and runs of digits or
/// long hex with `#`, and collapses whitespace.
pub fn normalize_message(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '"' || c == '\'' {
            for d in chars.by_ref() {
                if d == c {
                    break;
                }
            }
            out.push('?');
        } else if c.is_ascii_alphanumeric() {
            let mut token = String::from(c);
            while let Some(&d) = chars.peek() {
                if d.is_ascii_alphanumeric() || d == '_' || d == '-' {
                    token.push(d);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push_str(&normalize_token(&token));
        } else if c.is_whitespace() {
            if !out.ends_with(' ') {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
    out.trim().to_string()
}

fn normalize_token(token: &str) -> String {
    let digits = token.bytes().filter(u8::is_ascii_digit).count();
    let is_hexish = token.len() >= 8 && token.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    if is_hexish && digits > 0 || token.bytes().all(|b| b.is_ascii_digit()) {
        return "#".to_string();
    }
    // Ids such as evt_1NG8Du2eZvKYlo2C: keep the prefix, drop the variable part.
    if digits > 0 {
        if let Some((prefix, _)) = token.split_once('_') {
            return format!("{}_#", prefix.to_ascii_lowercase());
        }
        let lettered: String = token.chars().filter(|c| !c.is_ascii_digit()).collect();
        return format!("{}#", lettered.to_ascii_lowercase());
    }
    token.to_ascii_lowercase()
}
