//! A map kept as a list of pairs and searched in order.
//!
//! The maps of one message batch (bodies by event, breakers and drains by
//! destination, ingest results by key) hold at most a batch's worth of
//! entries, so a linear search costs nothing next to a D1 round trip. A
//! `HashMap` costs each worker its hasher and table code, and a `BTreeMap`
//! a copy of the tree code per entry type (both measured with twiggy on the
//! relay's wasm); this is a few small functions per type.

use std::borrow::Borrow;

/// A map of few entries, in insertion order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VecMap<K, V>(Vec<(K, V)>);

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        VecMap(Vec::new())
    }
}

impl<K: PartialEq, V> VecMap<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value under `key`.
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: PartialEq + ?Sized,
    {
        self.0
            .iter()
            .find(|(k, _)| k.borrow() == key)
            .map(|(_, v)| v)
    }

    /// Whether `key` has a value.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: PartialEq + ?Sized,
    {
        self.get(key).is_some()
    }

    /// Sets `key` to `value`, answering the value it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => Some(std::mem::replace(v, value)),
            None => {
                self.0.push((key, value));
                None
            }
        }
    }

    /// Takes the value under `key` out of the map.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: PartialEq + ?Sized,
    {
        let at = self.0.iter().position(|(k, _)| k.borrow() == key)?;
        Some(self.0.remove(at).1)
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The entries, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl<K: PartialEq, V> Extend<(K, V)> for VecMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, entries: I) {
        for (k, v) in entries {
            self.insert(k, v);
        }
    }
}

impl<K: PartialEq, V> FromIterator<(K, V)> for VecMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(entries: I) -> Self {
        let mut map = VecMap::new();
        map.extend(entries);
        map
    }
}

impl<K, V> IntoIterator for VecMap<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_insert_replaces_and_order_is_kept() {
        let mut m: VecMap<String, u32> = [("b".into(), 1), ("a".into(), 2)].into_iter().collect();
        assert_eq!(m.insert("b".into(), 3), Some(1));
        assert_eq!(m.insert("c".into(), 4), None);
        assert_eq!(m.get("b"), Some(&3));
        assert!(m.contains_key("a") && !m.contains_key("z"));
        let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a", "c"]);
        assert_eq!(m.len(), 3);
        m.extend([("a".to_string(), 9)]);
        assert_eq!(m.get("a"), Some(&9));
        assert_eq!(m.remove("b"), Some(3));
        assert_eq!(m.remove("b"), None);
        m.insert("b".into(), 5);
        assert_eq!(m.into_iter().count(), 3);
        assert!(VecMap::<String, u32>::new().is_empty());
    }
}
