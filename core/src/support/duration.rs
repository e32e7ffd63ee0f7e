//! Durations written with a unit, as configuration gives them: `90s`,
//! `15m`, `12h`, `30d`.

/// Milliseconds in one unit, by its suffix.
fn unit_ms(unit: &str) -> Option<i64> {
    match unit {
        "s" => Some(1_000),
        "m" => Some(60_000),
        "h" => Some(3_600_000),
        "d" => Some(86_400_000),
        _ => None,
    }
}

/// Parses a whole number followed by one unit (`s`, `m`, `h` or `d`) into
/// milliseconds. A bare number is refused: a unit makes `72` vs `72h`
/// impossible to get wrong. The answer names what is expected.
pub fn parse_duration_ms(raw: &str) -> Result<i64, String> {
    const EXPECTED: &str =
        "must be a whole number with a unit s, m, h or d, e.g. 90s, 15m, 12h, 30d";
    let raw = raw.trim();
    let split = raw.find(|c: char| !c.is_ascii_digit()).unwrap_or(raw.len());
    let (digits, unit) = raw.split_at(split);
    let (Ok(n), Some(per)) = (digits.parse::<i64>(), unit_ms(unit)) else {
        return Err(EXPECTED.to_string());
    };
    match n.checked_mul(per) {
        Some(ms) if ms > 0 => Ok(ms),
        _ => Err(format!("{EXPECTED}, greater than zero")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_their_unit() {
        let table = [
            ("90s", Some(90_000)),
            ("15m", Some(900_000)),
            ("12h", Some(43_200_000)),
            ("30d", Some(2_592_000_000)),
            (" 2s ", Some(2_000)),
            ("72h", Some(259_200_000)),
            ("72", None),
            ("h", None),
            ("0s", None),
            ("-5s", None),
            ("1.5h", None),
            ("5w", None),
            ("5 s", None),
            ("", None),
            ("99999999999999999999d", None),
        ];
        for (raw, want) in table {
            assert_eq!(parse_duration_ms(raw).ok(), want, "{raw:?}");
        }
    }
}
