//! Sizes written with a unit, as configuration gives them: `500MB`, `8GB`.
//!
//! `KB`, `MB`, `GB` and `TB` are decimal (powers of 1000), as Cloudflare
//! states D1's limits ("10 GB" is 10,000,000,000 bytes in `meta.size_after`
//! terms); `KiB`, `MiB`, `GiB` and `TiB` are binary (powers of 1024), for an
//! operator who thinks in those. `B` is bytes. Units are case-sensitive, so
//! `mb` (or `Mb`, megabits) is refused rather than guessed, and a bare number
//! is refused like a bare duration: a unit makes `8` vs `8GB` impossible to
//! get wrong.

/// Bytes in one unit, by its suffix.
fn unit_bytes(unit: &str) -> Option<u64> {
    const K: u64 = 1000;
    const KI: u64 = 1024;
    match unit {
        "B" => Some(1),
        "KB" => Some(K),
        "MB" => Some(K * K),
        "GB" => Some(K * K * K),
        "TB" => Some(K * K * K * K),
        "KiB" => Some(KI),
        "MiB" => Some(KI * KI),
        "GiB" => Some(KI * KI * KI),
        "TiB" => Some(KI * KI * KI * KI),
        _ => None,
    }
}

/// Parses a whole number followed by one unit (`B`, `KB`, `MB`, `GB`, `TB`,
/// `KiB`, `MiB`, `GiB`, `TiB`) into bytes. Zero, fractions, a missing or
/// unknown unit, and overflow are refused with what is expected.
pub fn parse_size_bytes(raw: &str) -> Result<u64, String> {
    const EXPECTED: &str = "must be a whole number with a unit B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. 500MB, 8GB";
    let raw = raw.trim();
    let split = raw.find(|c: char| !c.is_ascii_digit()).unwrap_or(raw.len());
    let (digits, unit) = raw.split_at(split);
    let (Ok(n), Some(per)) = (digits.parse::<u64>(), unit_bytes(unit)) else {
        return Err(EXPECTED.to_string());
    };
    match n.checked_mul(per) {
        Some(bytes) if bytes > 0 => Ok(bytes),
        _ => Err(format!("{EXPECTED}, greater than zero")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_their_unit_decimal_or_binary() {
        let table = [
            ("500MB", Some(500_000_000)),
            ("8GB", Some(8_000_000_000)),
            ("10GB", Some(10_000_000_000)),
            ("1KB", Some(1_000)),
            ("1KiB", Some(1_024)),
            ("2MiB", Some(2_097_152)),
            ("1GiB", Some(1_073_741_824)),
            ("1TB", Some(1_000_000_000_000)),
            ("64B", Some(64)),
            (" 8GB ", Some(8_000_000_000)),
            ("8", None),
            ("GB", None),
            ("0GB", None),
            ("8gb", None),
            ("8Mb", None),
            ("8 GB", None),
            ("1.5GB", None),
            ("-1GB", None),
            ("8PB", None),
            ("", None),
            ("99999999999TiB", None),
        ];
        for (raw, want) in table {
            assert_eq!(parse_size_bytes(raw).ok(), want, "{raw:?}");
        }
    }

    #[test]
    fn a_refusal_names_the_accepted_units() {
        let e = parse_size_bytes("8").unwrap_err();
        assert!(e.contains("GB") && e.contains("GiB"), "{e}");
    }
}
