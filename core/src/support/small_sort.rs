//! A stable sort for the short lists the workers sort: alarm conditions,
//! due alerts, the alert listing, an entry's attempts, a job's signature
//! groups, a group's sources.
//!
//! std's `sort_by` is driftsort: a quicksort, a merge and small-sort
//! networks, about 4 KB of wasm for each element type sorted (measured on
//! the relay, three types: 9 KB before gzip). These lists hold at most a
//! few hundred items (one run's alarms, one page of alerts), where an
//! insertion sort's O(n²) compares cost microseconds and its code is a
//! loop per element type; input already in order (a job's groups, which
//! D1 answers sorted) costs one compare per item.

use std::cmp::Ordering;

/// Sorts `v` by `cmp`, stably: equal items keep their order.
pub fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    for i in 1..v.len() {
        let mut j = i;
        while j > 0 && cmp(&v[j - 1], &v[j]) == Ordering::Greater {
            v.swap(j - 1, j);
            j -= 1;
        }
    }
}

/// Sorts `v` by the key `key` gives each item, stably.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lists with repeated keys, each item tagged with its first position.
    fn cases() -> Vec<Vec<(u8, usize)>> {
        let lists: [&[u8]; 7] = [
            &[],
            &[1],
            &[2, 1],
            &[1, 1, 1],
            &[3, 1, 2, 1, 3, 2, 1],
            &[9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
            &[0, 1, 2, 3, 3, 2, 1, 0, 5, 5, 4],
        ];
        let mut out: Vec<Vec<(u8, usize)>> = lists
            .iter()
            .map(|l| l.iter().copied().zip(0..).collect())
            .collect();
        // A longer list from a fixed sequence (no randomness in core).
        let mut x: u32 = 7;
        let long = (0..300)
            .map(|i| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                ((x >> 16) as u8 % 17, i)
            })
            .collect();
        out.push(long);
        out
    }

    #[test]
    fn sorts_like_std_s_stable_sort_keeping_equal_items_in_order() {
        for list in cases() {
            let mut ours = list.clone();
            let mut std_sorted = list.clone();
            sort_by(&mut ours, |a, b| a.0.cmp(&b.0));
            std_sorted.sort_by_key(|a| a.0);
            assert_eq!(ours, std_sorted, "input {list:?}");
        }
    }

    #[test]
    fn sorts_by_key_descending_too() {
        for list in cases() {
            let mut ours = list.clone();
            let mut std_sorted = list.clone();
            sort_by_key(&mut ours, |a| std::cmp::Reverse(a.0));
            std_sorted.sort_by_key(|a| std::cmp::Reverse(a.0));
            assert_eq!(ours, std_sorted, "input {list:?}");
        }
    }
}
