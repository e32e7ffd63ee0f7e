//! Which entries a job's canary takes: a representative slice, not just the
//! easiest messages. With `per_signature`, one entry of each error
//! signature first (largest groups first, the oldest entry of each), until
//! the size is reached; then the oldest entries fill it up.

/// One error signature in the job's set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureGroup {
    /// `sig_…`.
    pub signature: String,
    /// Entries with it.
    pub count: u64,
    /// Its oldest entry.
    pub oldest_id: String,
}

/// The canary's entry ids, in the order they run. `groups` may come in any
/// order; `oldest` is the set's oldest entries, oldest first (at least
/// `size` of them when the set has that many).
pub fn compose(
    groups: &[SignatureGroup],
    oldest: &[String],
    size: u32,
    per_signature: bool,
) -> Vec<String> {
    let size = size as usize;
    let mut chosen: Vec<String> = Vec::with_capacity(size);
    if per_signature {
        let mut by_size: Vec<&SignatureGroup> = groups.iter().collect();
        // D1 answers the groups in this order already, which the
        // insertion sort checks in one pass.
        crate::support::small_sort::sort_by(&mut by_size, |a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.signature.cmp(&b.signature))
        });
        for g in by_size {
            if chosen.len() == size {
                break;
            }
            if !chosen.contains(&g.oldest_id) {
                chosen.push(g.oldest_id.clone());
            }
        }
    }
    for id in oldest {
        if chosen.len() == size {
            break;
        }
        if !chosen.contains(id) {
            chosen.push(id.clone());
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(sig: &str, count: u64, oldest: &str) -> SignatureGroup {
        SignatureGroup {
            signature: sig.into(),
            count,
            oldest_id: oldest.into(),
        }
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_canary_covers_signatures_largest_first_then_the_oldest() {
        let groups = [
            g("sig_b", 5, "b1"),
            g("sig_a", 40, "a1"),
            g("sig_c", 15, "c1"),
        ];
        let oldest = ids(&["a1", "b1", "a2", "c1", "a3"]);
        let table: [(u32, bool, &[&str]); 6] = [
            (3, true, &["a1", "c1", "b1"]),
            (2, true, &["a1", "c1"]),
            (5, true, &["a1", "c1", "b1", "a2", "a3"]),
            (3, false, &["a1", "b1", "a2"]),
            (0, true, &[]),
            (9, true, &["a1", "c1", "b1", "a2", "a3"]),
        ];
        for (size, per_sig, want) in table {
            assert_eq!(
                compose(&groups, &oldest, size, per_sig),
                ids(want),
                "{size} {per_sig}"
            );
        }
    }

    #[test]
    fn equal_groups_are_ordered_by_signature_so_a_dry_run_matches_the_job() {
        let a = [g("sig_y", 2, "y"), g("sig_x", 2, "x")];
        let b = [g("sig_x", 2, "x"), g("sig_y", 2, "y")];
        assert_eq!(compose(&a, &[], 2, true), compose(&b, &[], 2, true));
    }
}
