//! The cryptographic steps the relay leaves to workerd's WebCrypto
//! (`platform/src/webcrypto.rs`), run here with native RustCrypto code
//! behind the same core interface: the core's verifier decides what is
//! signed and what must match, and hands over a
//! [`hookrelay_core::signature::Deferred`] check (HMAC-SHA1, -SHA512,
//! HMAC-SHA256 over a large message, Ed25519, ECDSA P-256); this only runs
//! it. Also the HMACs `send` signs with, for every hash a scheme may name.

use ed25519_dalek::Verifier as _;
use hmac::{Hmac, Mac};
use hookrelay_core::signature::{Deferred, HmacCheck, MacAlg, PublicKeyAlg, PublicKeyCheck};
use p256::pkcs8::DecodePublicKey as _;

/// Whether `check` holds over the request `body` (`public_key`, the
/// source's decoded key, for a public-key check), as WebCrypto would
/// answer. A key that cannot be read does not hold.
pub fn holds(check: &Deferred, public_key: Option<&[u8]>, body: &[u8]) -> bool {
    match check {
        Deferred::Hmac(h) => hmac_holds(h, body),
        Deferred::PublicKey(pk) => public_key.is_some_and(|key| public_key_holds(pk, key, body)),
    }
}

/// Any presented signature matches the MAC of any message under any key,
/// each compared in constant time (`Mac::verify_slice`).
fn hmac_holds(check: &HmacCheck, body: &[u8]) -> bool {
    check.keys.iter().any(|key| {
        check.messages.iter().any(|m| {
            let text = m.concat(body);
            check
                .signatures
                .iter()
                .any(|sig| verify_mac(check.alg, key, &text, sig))
        })
    })
}

fn verify_mac(alg: MacAlg, key: &[u8], message: &[u8], signature: &[u8]) -> bool {
    fn run<M: Mac + hmac::digest::KeyInit>(key: &[u8], message: &[u8], signature: &[u8]) -> bool {
        let mut mac =
            <M as hmac::digest::KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
        mac.update(message);
        mac.verify_slice(signature).is_ok()
    }
    match alg {
        MacAlg::Sha1 => run::<Hmac<sha1::Sha1>>(key, message, signature),
        MacAlg::Sha256 => run::<Hmac<sha2::Sha256>>(key, message, signature),
        MacAlg::Sha512 => run::<Hmac<sha2::Sha512>>(key, message, signature),
    }
}

/// The HMAC of `message` under `key`, for signing.
pub fn mac(alg: MacAlg, key: &[u8], message: &[u8]) -> Vec<u8> {
    fn run<M: Mac + hmac::digest::KeyInit>(key: &[u8], message: &[u8]) -> Vec<u8> {
        let mut mac =
            <M as hmac::digest::KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
        mac.update(message);
        mac.finalize().into_bytes().to_vec()
    }
    match alg {
        MacAlg::Sha1 => run::<Hmac<sha1::Sha1>>(key, message),
        MacAlg::Sha256 => run::<Hmac<sha2::Sha256>>(key, message),
        MacAlg::Sha512 => run::<Hmac<sha2::Sha512>>(key, message),
    }
}

/// Ed25519 under a raw 32-byte key, or ECDSA P-256 with SHA-256 under an
/// SPKI DER key and an `r‖s` signature (the core converted it from DER).
fn public_key_holds(check: &PublicKeyCheck, key: &[u8], body: &[u8]) -> bool {
    let message = check.message.concat(body);
    match check.alg {
        PublicKeyAlg::Ed25519 => {
            let (Ok(key), Ok(sig)) = (
                <[u8; 32]>::try_from(key),
                ed25519_dalek::Signature::from_slice(&check.signature),
            ) else {
                return false;
            };
            ed25519_dalek::VerifyingKey::from_bytes(&key)
                .is_ok_and(|k| k.verify(&message, &sig).is_ok())
        }
        PublicKeyAlg::EcdsaP256 => {
            let (Ok(key), Ok(sig)) = (
                p256::ecdsa::VerifyingKey::from_public_key_der(key),
                p256::ecdsa::Signature::from_slice(&check.signature),
            ) else {
                return false;
            };
            key.verify(&message, &sig).is_ok()
        }
    }
}

#[cfg(test)]
mod tests;
