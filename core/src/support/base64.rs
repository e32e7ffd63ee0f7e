//! Base64 (RFC 4648) in the two forms hookrelay reads and writes: padded
//! standard (Standard Webhooks secrets and signatures) and unpadded
//! base64url (JWTs, page cursors).
//!
//! Written here rather than taken from the `base64` crate, whose generic
//! engine was about 4 KB of each worker's wasm for these few calls. Decoding
//! is strict, as the crate's default engines are: the padding must be
//! exactly right and the unused low bits of the last symbol must be zero,
//! so every byte string has one accepted spelling.

/// One base64 form.
#[derive(Debug, Clone, Copy)]
pub struct Base64 {
    url: bool,
}

/// `A–Z a–z 0–9 + /`, padded with `=` to a multiple of four.
pub const STANDARD: Base64 = Base64 { url: false };

/// `A–Z a–z 0–9 - _`, without padding.
pub const URL_SAFE_NO_PAD: Base64 = Base64 { url: true };

/// Text that is not base64 in the expected form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError;

impl Base64 {
    fn symbol(self, six: u8) -> char {
        let c = match six {
            0..=25 => b'A' + six,
            26..=51 => b'a' + (six - 26),
            52..=61 => b'0' + (six - 52),
            62 if self.url => b'-',
            62 => b'+',
            _ if self.url => b'_',
            _ => b'/',
        };
        c as char
    }

    fn value(self, c: u8) -> Option<u32> {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' if self.url => 62,
            b'_' if self.url => 63,
            b'+' if !self.url => 62,
            b'/' if !self.url => 63,
            _ => return None,
        };
        Some(u32::from(v))
    }

    /// `bytes` in this form.
    pub fn encode(self, bytes: impl AsRef<[u8]>) -> String {
        let bytes = bytes.as_ref();
        let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
            let symbols = chunk.len() + 1;
            for i in 0..4 {
                if i < symbols {
                    out.push(self.symbol((n >> (18 - 6 * i)) as u8 & 0x3f));
                } else if !self.url {
                    out.push('=');
                }
            }
        }
        out
    }

    /// The bytes `text` spells, if it is canonical base64 in this form.
    pub fn decode(self, text: impl AsRef<[u8]>) -> Result<Vec<u8>, DecodeError> {
        let mut text = text.as_ref();
        if !self.url {
            if text.len() % 4 != 0 {
                return Err(DecodeError);
            }
            let pad = text
                .iter()
                .rev()
                .take(2)
                .take_while(|&&c| c == b'=')
                .count();
            text = &text[..text.len() - pad];
        }
        if text.len() % 4 == 1 {
            return Err(DecodeError);
        }
        let mut out = Vec::with_capacity(text.len() * 3 / 4);
        for chunk in text.chunks(4) {
            let mut n = 0u32;
            for (i, &c) in chunk.iter().enumerate() {
                n |= self.value(c).ok_or(DecodeError)? << (18 - 6 * i);
            }
            let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            let kept = chunk.len() - 1;
            // The bits below the last whole byte must be zero (canonical).
            if kept < 3 && bytes[kept] != 0 {
                return Err(DecodeError);
            }
            out.extend_from_slice(&bytes[..kept]);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    #[test]
    fn rfc_4648_vectors() {
        let table = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, coded) in table {
            assert_eq!(STANDARD.encode(plain), coded);
            assert_eq!(STANDARD.decode(coded).unwrap(), plain.as_bytes());
            let url = coded.trim_end_matches('=');
            assert_eq!(URL_SAFE_NO_PAD.encode(plain), url);
            assert_eq!(URL_SAFE_NO_PAD.decode(url).unwrap(), plain.as_bytes());
        }
    }

    #[test]
    fn malformed_and_non_canonical_text_is_refused() {
        for bad in [
            "Zg", "Zg=", "Zh==", "Zm9=", "Z===", "Zm9v=", "Zm-v", "Zm9v\n", "====", "Z",
        ] {
            assert_eq!(STANDARD.decode(bad), Err(DecodeError), "{bad}");
        }
        for bad in ["Zg==", "Zh", "Zm9", "Zm+v", "Zm/v", "Z", "Zm9vY"] {
            assert_eq!(URL_SAFE_NO_PAD.decode(bad), Err(DecodeError), "{bad}");
        }
    }

    /// The `base64` crate's default engines as the oracle, over every
    /// length up to 64 and every byte value, plus a stream of pseudo-random
    /// texts made of the alphabet and padding.
    #[test]
    fn agrees_with_the_base64_crate() {
        use base64::engine::general_purpose::{STANDARD as S, URL_SAFE_NO_PAD as U};
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for len in 0..64 {
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            assert_eq!(STANDARD.encode(&bytes), S.encode(&bytes));
            assert_eq!(URL_SAFE_NO_PAD.encode(&bytes), U.encode(&bytes));
        }
        let symbols = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=";
        for _ in 0..20_000 {
            let len = (next() % 12) as usize;
            let text: Vec<u8> = (0..len)
                .map(|_| symbols[(next() % symbols.len() as u64) as usize])
                .collect();
            assert_eq!(
                STANDARD.decode(&text).ok(),
                S.decode(&text).ok(),
                "{text:?}"
            );
            assert_eq!(
                URL_SAFE_NO_PAD.decode(&text).ok(),
                U.decode(&text).ok(),
                "{text:?}"
            );
        }
    }
}
