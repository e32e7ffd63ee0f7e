//! The limit on failing signature checks (DESIGN §7): a client address
//! whose checks keep failing for a source is refused with 429 before its
//! next bodies are read. The Workers rate-limiting binding counts the
//! failures under [`limit_key`]; once it says no, the (source, address) is
//! remembered here, per isolate, for [`PERIOD_S`], so the refusal costs no
//! call and no body read. Requests that verify are never counted.

/// The binding that counts failed checks (`[[ratelimits]]` `name`).
pub const BINDING: &str = "SIGNATURE_LIMITER";

/// The binding's period (`[[ratelimits]]` `simple.period` in
/// wrangler.toml; build.rs checks they agree): how long a blocked
/// (source, address) stays refused. Cloudflare allows 10 or 60.
pub const PERIOD_S: u32 = 60;

/// Most (source, address) pairs one isolate remembers; past it the one
/// closest to its end is forgotten (the binding still counts it).
const MAX_BLOCKED: usize = 1024;

/// The key a failed check is counted under: `<source>:<address>`, where an
/// IPv6 address stands for its /64 (one host holds a whole /64, so
/// counting single addresses would let it rotate freely). An address that
/// is absent or unreadable is counted as `unknown`.
pub fn limit_key(source: &str, connecting_ip: Option<&str>) -> String {
    let ip = connecting_ip.map(str::trim).unwrap_or("");
    let address = if ip.contains(':') {
        ipv6_prefix(ip).unwrap_or_else(|| "unknown".to_string())
    } else if is_ipv4(ip) {
        ip.to_string()
    } else {
        "unknown".to_string()
    };
    format!("{source}:{address}")
}

fn is_ipv4(text: &str) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    parts.len() == 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
        && parts
            .iter()
            .all(|p| p.parse::<u16>().is_ok_and(|n| n <= 255))
}

/// `a:b:c:d::/64` for an IPv6 address; an IPv4-mapped one (`::ffff:1.2.3.4`)
/// as its IPv4 address.
fn ipv6_prefix(text: &str) -> Option<String> {
    let groups = ipv6_groups(text)?;
    if groups[..5] == [0; 5] && groups[5] == 0xffff {
        let [a, b] = groups[6].to_be_bytes();
        let [c, d] = groups[7].to_be_bytes();
        return Some(format!("{a}.{b}.{c}.{d}"));
    }
    Some(format!(
        "{:x}:{:x}:{:x}:{:x}::/64",
        groups[0], groups[1], groups[2], groups[3]
    ))
}

/// The eight 16-bit groups of an IPv6 address (with `::` and a dotted IPv4
/// tail), or `None` when it is not one.
fn ipv6_groups(text: &str) -> Option<[u16; 8]> {
    let text = text.split('%').next()?; // a zone id is not part of the address
    let (head, tail) = match text.find("::") {
        Some(i) => (&text[..i], Some(&text[i + 2..])),
        None => (text, None),
    };
    let parse = |part: &str| -> Option<Vec<u16>> {
        if part.is_empty() {
            return Some(Vec::new());
        }
        let mut out = Vec::new();
        let pieces: Vec<&str> = part.split(':').collect();
        for (i, piece) in pieces.iter().enumerate() {
            if i == pieces.len() - 1 && piece.contains('.') {
                if !is_ipv4(piece) {
                    return None;
                }
                let b: Vec<u16> = piece.split('.').map(|p| p.parse().unwrap_or(0)).collect();
                out.push((b[0] << 8) | b[1]);
                out.push((b[2] << 8) | b[3]);
            } else if (1..=4).contains(&piece.len()) && piece.bytes().all(|b| b.is_ascii_hexdigit())
            {
                out.push(u16::from_str_radix(piece, 16).ok()?);
            } else {
                return None;
            }
        }
        Some(out)
    };
    let front = parse(head)?;
    let mut groups = [0u16; 8];
    match tail {
        None if front.len() == 8 => groups.copy_from_slice(&front),
        None => return None,
        Some(tail) => {
            if tail.contains("::") {
                return None;
            }
            let back = parse(tail)?;
            if front.len() + back.len() > 7 {
                return None;
            }
            groups[..front.len()].copy_from_slice(&front);
            groups[8 - back.len()..].copy_from_slice(&back);
        }
    }
    Some(groups)
}

/// The (source, address) keys refused until their period ends, in one
/// isolate.
#[derive(Debug, Default)]
pub struct Blocked {
    until_ms: Vec<(String, i64)>,
}

impl Blocked {
    /// Whether nothing is blocked (the common case: no lookup, no key).
    pub fn is_empty(&self) -> bool {
        self.until_ms.is_empty()
    }

    /// The seconds left on `key`'s block at `now_ms` (for `Retry-After`,
    /// at least 1), or `None` when it is not blocked.
    pub fn retry_after_s(&self, key: &str, now_ms: i64) -> Option<u32> {
        let until = self
            .until_ms
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, until)| *until)?;
        let left_ms = until - now_ms;
        (left_ms > 0).then(|| u32::try_from((left_ms + 999) / 1000).unwrap_or(PERIOD_S))
    }

    /// Blocks `key` from `now_ms` for one period; forgets ended blocks.
    pub fn block(&mut self, key: &str, now_ms: i64) {
        self.until_ms
            .retain(|(k, until)| *until > now_ms && k != key);
        if self.until_ms.len() >= MAX_BLOCKED {
            if let Some(i) = (0..self.until_ms.len()).min_by_key(|&i| self.until_ms[i].1) {
                self.until_ms.swap_remove(i);
            }
        }
        self.until_ms
            .push((key.to_string(), now_ms + i64::from(PERIOD_S) * 1000));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_the_source_and_the_address_an_ipv6_one_by_its_64() {
        let cases: &[(Option<&str>, &str)] = &[
            (Some("203.0.113.7"), "acme:203.0.113.7"),
            (Some(" 203.0.113.7 "), "acme:203.0.113.7"),
            (Some("2001:db8:1:2:3:4:5:6"), "acme:2001:db8:1:2::/64"),
            (Some("2001:db8:1:2::9"), "acme:2001:db8:1:2::/64"),
            (Some("2001:DB8:0001:0002:ffff::"), "acme:2001:db8:1:2::/64"),
            (Some("2001:db8::"), "acme:2001:db8:0:0::/64"),
            (Some("::1"), "acme:0:0:0:0::/64"),
            (Some("fe80::1%eth0"), "acme:fe80:0:0:0::/64"),
            (Some("::ffff:198.51.100.4"), "acme:198.51.100.4"),
            (Some("64:ff9b::192.0.2.33"), "acme:64:ff9b:0:0::/64"),
            (None, "acme:unknown"),
            (Some(""), "acme:unknown"),
            (Some("999.1.1.1"), "acme:unknown"),
            (Some("1.2.3"), "acme:unknown"),
            (Some("2001:db8::1::2"), "acme:unknown"),
            (Some("2001:db8:1:2:3:4:5:6:7"), "acme:unknown"),
            (Some("12345::"), "acme:unknown"),
            // A sign is no hex digit (`from_str_radix` alone would take it).
            (Some("+1:db8:1:2::"), "acme:unknown"),
            (Some("not an address"), "acme:unknown"),
        ];
        for (ip, want) in cases {
            assert_eq!(limit_key("acme", *ip), *want, "{ip:?}");
        }
    }

    #[test]
    fn two_addresses_of_one_64_share_a_key_and_another_64_does_not() {
        let a = limit_key("s", Some("2001:db8:aa:bb:1::1"));
        assert_eq!(
            a,
            limit_key("s", Some("2001:db8:aa:bb:ffff:ffff:ffff:ffff"))
        );
        assert_ne!(a, limit_key("s", Some("2001:db8:aa:bc::1")));
        assert_ne!(a, limit_key("t", Some("2001:db8:aa:bb::1")));
    }

    #[test]
    fn a_block_lasts_one_period_and_says_how_long_is_left() {
        let mut blocked = Blocked::default();
        let t0 = 1_000_000;
        assert_eq!(blocked.retry_after_s("k", t0), None);
        blocked.block("k", t0);
        let cases = [
            (t0, Some(PERIOD_S)),
            (t0 + 1, Some(PERIOD_S)),
            (t0 + 59_001, Some(1)),
            (t0 + 59_999, Some(1)),
            (t0 + 60_000, None),
            (t0 + 90_000, None),
        ];
        for (now, want) in cases {
            assert_eq!(blocked.retry_after_s("k", now), want, "at +{}", now - t0);
        }
        assert_eq!(blocked.retry_after_s("other", t0), None);
        // Blocked again later: a fresh period, one entry.
        blocked.block("k", t0 + 70_000);
        assert_eq!(blocked.retry_after_s("k", t0 + 70_000), Some(PERIOD_S));
        assert_eq!(blocked.until_ms.len(), 1);
    }

    #[test]
    fn the_isolate_remembers_a_bounded_number_of_blocks() {
        let mut blocked = Blocked::default();
        for i in 0..(MAX_BLOCKED + 10) {
            blocked.block(&format!("k{i}"), 1_000 + i as i64);
        }
        assert_eq!(blocked.until_ms.len(), MAX_BLOCKED);
        assert_eq!(
            blocked.retry_after_s("k0", 2_000),
            None,
            "the oldest is forgotten"
        );
        let last = format!("k{}", MAX_BLOCKED + 9);
        assert!(blocked.retry_after_s(&last, 2_000).is_some());
    }
}
