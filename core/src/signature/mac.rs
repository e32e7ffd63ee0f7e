//! The keys and the MACs: how a secret becomes a key, HMAC-SHA256 over the
//! signed pieces, and the constant-time comparison every check goes
//! through. HMAC-SHA1 and HMAC-SHA512 (Twilio, Intercom, recipes) run in
//! WebCrypto (`verifier::HmacCheck`): their compression functions were
//! about 7 KB of the relay's gzipped wasm for providers that are rare.

use super::scheme::KeyForm;
use crate::base64::STANDARD;
use hmac::{Hmac, Mac};
use std::fmt;

/// Key material for one source, decoded once when configuration loads.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey(Vec<u8>);

impl SigningKey {
    /// Builds a key from the configured secret string.
    ///
    /// The error text never repeats the secret or any part of it, because
    /// configuration errors end up in logs.
    pub fn from_secret(form: KeyForm, secret: &str) -> Result<SigningKey, String> {
        if secret.is_empty() {
            return Err("the secret is empty".into());
        }
        match form {
            KeyForm::Raw => Ok(SigningKey(secret.as_bytes().to_vec())),
            KeyForm::Base64 => match STANDARD.decode(secret.trim()) {
                Ok(key) if !key.is_empty() => Ok(SigningKey(key)),
                _ => Err("the secret is not padded standard base64, as this source's key form \"base64\" requires".into()),
            },
            KeyForm::Whsec => decode_whsec(secret).map(SigningKey),
        }
    }

    /// The raw key bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningKey(<redacted>)")
    }
}

/// The prefix senders put in front of the base64 secret; optional, because
/// the reference libraries accept the bare base64 too.
const WHSEC: &str = "whsec_";

fn decode_whsec(secret: &str) -> Result<Vec<u8>, String> {
    // A trailing newline from a secrets file is never part of the base64.
    let encoded = secret.trim();
    let encoded = encoded.strip_prefix(WHSEC).unwrap_or(encoded);
    if encoded.is_empty() {
        return Err("the standard-webhooks secret has nothing after the whsec_ prefix".into());
    }
    // The decoder's own error could point into the secret: replaced wholesale.
    match STANDARD.decode(encoded) {
        Ok(key) if !key.is_empty() => Ok(key),
        _ => Err("the standard-webhooks secret is not padded standard base64 after the optional whsec_ prefix".into()),
    }
}

/// HMAC-SHA256, which the admin JWT uses too.
pub(crate) type HmacSha256 = Hmac<sha2::Sha256>;

/// A keyed HMAC-SHA256 over the concatenated parts: the one copy of the
/// MAC set-up, shared with the admin JWT.
pub(crate) fn mac_parts(key: &[u8], parts: &[&[u8]]) -> HmacSha256 {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC accepts keys of any length");
    for p in parts {
        m.update(p);
    }
    m
}

/// The HMAC-SHA256 of the concatenated parts.
pub fn sha256(key: &[u8], parts: &[impl AsRef<[u8]>]) -> Vec<u8> {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC accepts keys of any length");
    for p in parts {
        m.update(p.as_ref());
    }
    m.finalize().into_bytes().to_vec()
}

/// Equal bytes, compared in time that depends only on the lengths.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_sha256_matches_its_rfc_test_vector() {
        // RFC 4231 test case 2.
        let got = sha256(b"Jefe", &["what do ya want ", "for nothing?"]);
        assert_eq!(
            hex::encode(&got),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    /// The form, the secret, and the key or a fragment of the refusal.
    type KeyCase<'a> = (KeyForm, &'a str, Result<&'a [u8], &'a str>);

    #[test]
    fn each_key_form_reads_its_secret_and_never_echoes_a_bad_one() {
        #[rustfmt::skip]
        let table: [KeyCase; 7] = [
            (KeyForm::Raw, "s3cret", Ok(b"s3cret")),
            (KeyForm::Base64, "czNjcmV0", Ok(b"s3cret")),
            (KeyForm::Whsec, "whsec_czNjcmV0", Ok(b"s3cret")),
            (KeyForm::Whsec, "czNjcmV0\n", Ok(b"s3cret")),
            (
                KeyForm::Whsec,
                "whsec_",
                Err("nothing after the whsec_ prefix"),
            ),
            (
                KeyForm::Whsec,
                "whsec_s3cr3t-with-dash!",
                Err("not padded standard base64"),
            ),
            (
                KeyForm::Base64,
                "s3cr3t-!",
                Err("not padded standard base64"),
            ),
        ];
        for (form, secret, want) in table {
            match (SigningKey::from_secret(form, secret), want) {
                (Ok(k), Ok(bytes)) => assert_eq!(k.as_bytes(), bytes, "{secret}"),
                (Err(e), Err(fragment)) => {
                    assert!(e.contains(fragment), "{secret}: {e}");
                    assert!(!e.contains("s3cr3t"), "{secret}: echoes the secret: {e}");
                }
                (got, _) => panic!("{form:?} {secret}: {got:?}"),
            }
        }
        assert!(SigningKey::from_secret(KeyForm::Raw, "").is_err());
    }

    #[test]
    fn ct_eq_compares_bytes_and_lengths() {
        assert!(ct_eq(b"abc", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(!ct_eq(b"abc", b"ab"));
        assert!(ct_eq(b"", b""));
    }
}
