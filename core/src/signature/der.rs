//! ECDSA signatures from DER to the raw `r‖s` WebCrypto takes.
//!
//! SendGrid sends `SEQUENCE { INTEGER r, INTEGER s }` in DER; WebCrypto's
//! ECDSA verify takes the two integers as 32 big-endian bytes each.

/// The P-256 `r‖s` of a DER signature; `None` for anything that is not
/// exactly one DER sequence of two positive integers of at most 32 bytes.
pub fn der_to_raw_p256(der: &[u8]) -> Option<Vec<u8>> {
    let (&tag, rest) = der.split_first()?;
    let (&len, body) = rest.split_first()?;
    // A P-256 signature is at most 72 bytes: the short length form only.
    if tag != 0x30 || len >= 0x80 || usize::from(len) != body.len() {
        return None;
    }
    let (r, rest) = integer(body)?;
    let (s, rest) = integer(rest)?;
    if !rest.is_empty() {
        return None;
    }
    let mut out = vec![0u8; 64];
    out[32 - r.len()..32].copy_from_slice(r);
    out[64 - s.len()..].copy_from_slice(s);
    Some(out)
}

/// One positive INTEGER's magnitude (its sign byte dropped) and what follows.
fn integer(der: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&len, rest) = rest.split_first()?;
    let len = usize::from(len);
    if tag != 0x02 || len == 0 || len >= 0x80 || rest.len() < len {
        return None;
    }
    let (value, rest) = rest.split_at(len);
    // Negative integers are not signatures; a leading zero is allowed only
    // before a byte with its high bit set (DER's minimal form).
    if value[0] & 0x80 != 0 {
        return None;
    }
    let magnitude = match value {
        [0, next, ..] if next & 0x80 != 0 => &value[1..],
        [0, _, ..] => return None,
        _ => value,
    };
    if magnitude.len() > 32 {
        return None;
    }
    Some((magnitude, rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::base64::STANDARD;

    #[test]
    fn sendgrids_documented_signature_converts_to_r_and_s() {
        // The signature in SendGrid's "Getting started with the Event
        // Webhook security features" page and @sendgrid/eventwebhook's tests.
        let der = STANDARD
            .decode("MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH2j/0=")
            .unwrap();
        let raw = der_to_raw_p256(&der).unwrap();
        assert_eq!(raw.len(), 64);
        // r is DER's 33-byte integer without its sign byte, s its 32 bytes.
        assert_eq!(&raw[..32], &der[5..37]);
        assert_eq!(&raw[32..], &der[39..71]);
    }

    #[test]
    fn short_integers_are_left_padded() {
        let der = [0x30, 0x06, 0x02, 0x01, 0x05, 0x02, 0x01, 0x07];
        let raw = der_to_raw_p256(&der).unwrap();
        assert_eq!((raw[31], raw[63]), (5, 7));
        assert!(raw[..31].iter().chain(&raw[32..63]).all(|&b| b == 0));
    }

    #[test]
    fn anything_but_one_sequence_of_two_small_positive_integers_is_refused() {
        let table: [(&str, &[u8]); 9] = [
            ("empty", &[]),
            (
                "not a sequence",
                &[0x31, 0x06, 0x02, 0x01, 0x05, 0x02, 0x01, 0x07],
            ),
            (
                "length disagrees",
                &[0x30, 0x07, 0x02, 0x01, 0x05, 0x02, 0x01, 0x07],
            ),
            ("one integer", &[0x30, 0x03, 0x02, 0x01, 0x05]),
            (
                "trailing bytes",
                &[0x30, 0x09, 0x02, 0x01, 0x05, 0x02, 0x01, 0x07, 0x00],
            ),
            (
                "negative r",
                &[0x30, 0x06, 0x02, 0x01, 0x85, 0x02, 0x01, 0x07],
            ),
            (
                "non-minimal zero",
                &[0x30, 0x07, 0x02, 0x02, 0x00, 0x05, 0x02, 0x01, 0x07],
            ),
            ("empty integer", &[0x30, 0x05, 0x02, 0x00, 0x02, 0x01, 0x07]),
            (
                "long form length",
                &[0x30, 0x81, 0x06, 0x02, 0x01, 0x05, 0x02, 0x01, 0x07],
            ),
        ];
        for (name, der) in table {
            assert_eq!(der_to_raw_p256(der), None, "{name}");
        }
        let mut big = vec![0x30, 0x26, 0x02, 0x21, 0x01];
        big.extend([1u8; 32]);
        big.extend([0x02, 0x01, 0x07]);
        assert_eq!(der_to_raw_p256(&big), None, "r of 33 significant bytes");
    }
}
