//! The keys and the MACs: how a secret becomes a key, HMAC-SHA256 over the
//! signed pieces, and the constant-time comparison every check goes
//! through. HMAC-SHA1 and HMAC-SHA512 (Twilio, Intercom, recipes) run in
//! WebCrypto (`verifier::HmacCheck`): their compression functions were
//! about 7 KB of the relay's gzipped wasm for providers that are rare.

use super::scheme::KeyForm;
use crate::support::base64::STANDARD;
use sha2::{Digest, Sha256};
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

/// HMAC-SHA256 (RFC 2104) of the concatenated parts, which the admin JWT
/// uses too. Written out over `sha2` rather than through the `hmac` crate,
/// whose generic key and output wrappers cost the relay's wasm more than
/// these lines.
pub(crate) fn mac_parts(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    for p in parts {
        inner.update(p);
    }
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// The HMAC-SHA256 of the concatenated parts.
pub fn sha256(key: &[u8], parts: &[impl AsRef<[u8]>]) -> Vec<u8> {
    let parts: Vec<&[u8]> = parts.iter().map(AsRef::as_ref).collect();
    mac_parts(key, &parts).to_vec()
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
    fn hmac_sha256_matches_its_rfc_test_vectors() {
        // RFC 4231 test case 2, and case 6 (a key longer than the block).
        let got = sha256(b"Jefe", &["what do ya want ", "for nothing?"]);
        assert_eq!(
            hex::encode(&got),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let long = sha256(
            &[0xaa; 131],
            &["Test Using Larger Than Block-Size Key - Hash Key First"],
        );
        assert_eq!(
            hex::encode(&long),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn hmac_sha256_agrees_with_the_hmac_crate_at_every_key_length() {
        use hmac::{Hmac, Mac};
        for len in [0, 1, 32, 63, 64, 65, 200] {
            let key: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut m = Hmac::<Sha256>::new_from_slice(&key).unwrap();
            m.update(b"a message, in two parts");
            let want = m.finalize().into_bytes().to_vec();
            assert_eq!(
                sha256(&key, &["a message, ", "in two parts"]),
                want,
                "{len}"
            );
        }
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
