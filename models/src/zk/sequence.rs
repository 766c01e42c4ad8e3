//! ZooKeeper's sequence counter: how wide it is, the names it gives, and the order of
//! sequential nodes across its wrap.
//!
//! ZooKeeper names a sequential node by appending its parent's persisted `cversion` — a
//! signed 32-bit counter that every create of a child bumps (the `cversion` a stat shows
//! also counts deletes: it is derived, see `tree::Znode::stat`) — formatted `%010d`
//! (`PrepRequestProcessor`). After 2147483647 the counter wraps to -2147483648
//! (ZOOKEEPER-2944 corrected the documentation to say so), and the names then carry a minus
//! sign: `lock--2147483648` (eleven characters after the prefix), and at `-5`,
//! `lock--000000005`. ZooKeeper does nothing else about it; ordering the names is the
//! client's business, and clients got it wrong: kazoo compared the sequences as text
//! (python-zk/kazoo#730: `"-2147483648" > "-2147483647"`, so each newer node came first), and
//! go-zookeeper dropped the sign by splitting the name on `-` (go-zookeeper/zk#65).
//!
//! [`SequenceWidth`] narrows the counter for tests, so that it wraps within a run: with a
//! width of `b` bits the sequence a create appends is the parent's `cversion` read as a
//! signed `b`-bit number (its low `b` bits, sign-extended), formatted `%010d` as ZooKeeper
//! does. The parent's `cversion` itself, as `stat` reports it, stays ZooKeeper's 32-bit
//! counter. At 32 bits, the default, the names are ZooKeeper's own.
//!
//! [`SequenceWidth::in_order`] is the order a correct client puts sequential nodes in:
//! *serial-number arithmetic* over the counter (RFC 1982, as python-zk/kazoo#606 asks for).
//! Plain signed order — what the fixed kazoo and go-zookeeper clients use — is not enough
//! for a lock: with a holder at `2147483647` a new waiter gets `-2147483648`, sorts first,
//! and holds beside it. In the counter's circular order the waiter comes right after the
//! holder. That order is well defined as long as the nodes alive together span less than
//! half the counter's range (2^31 creates under one parent while a node waits,
//! at 32 bits; 8 at the smallest width, [`SequenceWidth::MIN_BITS`]): then exactly one node
//! has every other within the next half range, and it is the oldest. Nodes that span more
//! cannot be ordered by their names at all (a name repeats every 2^b creates).

use std::fmt;

/// How many bits ZooKeeper's per-parent sequence counter has (32, ZooKeeper's own, unless a
/// test narrows it so that the counter wraps within a run).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SequenceWidth {
    bits: u32,
}

impl SequenceWidth {
    /// ZooKeeper's counter: a Java `int`.
    pub const ZOOKEEPER: SequenceWidth = SequenceWidth { bits: 32 };
    /// The narrowest counter allowed: it wraps every 8 bumps and orders nodes that span
    /// fewer than 8 creates — a line of a few clients with nothing in flight.
    pub const MIN_BITS: u32 = 4;

    /// A counter of `bits` bits, if that is between [`Self::MIN_BITS`] and 32.
    pub fn new(bits: u32) -> Option<SequenceWidth> {
        (Self::MIN_BITS..=32)
            .contains(&bits)
            .then_some(SequenceWidth { bits })
    }

    /// The number of bits.
    pub fn bits(self) -> u32 {
        self.bits
    }

    /// The sequence number a sequential create appends under a parent whose `cversion` is
    /// `cversion`: its low bits, read as a signed number of this width.
    pub fn sequence(self, cversion: i32) -> i32 {
        let unused = 32 - self.bits;
        (cversion << unused) >> unused
    }

    /// The text a sequential create appends: [`Self::sequence`] formatted `%010d`.
    pub fn suffix(self, cversion: i32) -> String {
        format!("{:010}", self.sequence(cversion))
    }

    /// Where `sequence` lies on the counter's circle, `0..2^bits`.
    fn position(self, sequence: i32) -> u64 {
        u64::from(sequence as u32) & ((1u64 << self.bits) - 1)
    }

    /// `nodes` (each with its sequence number) oldest first, by serial-number arithmetic: the
    /// first is the one node from which every other lies less than half the counter's range
    /// ahead, and the rest follow in the counter's order from it (equal sequences by their
    /// other field). When the nodes span half the range or more, no node is oldest by its
    /// name; they are then returned in signed order, which is what ZooKeeper's own fixed
    /// clients do.
    pub fn in_order<T: Ord>(self, nodes: Vec<(i32, T)>) -> Vec<T> {
        let mut placed: Vec<(u64, i32, T)> = nodes
            .into_iter()
            .map(|(sequence, node)| (self.position(sequence), sequence, node))
            .collect();
        placed.sort();
        let range = 1u64 << self.bits;
        // The gap before each node, going round the circle; the oldest node follows a gap
        // of more than half the range (there can be only one).
        // (A lone node follows the whole circle; the second of two equal ones, no gap.)
        let oldest = (0..placed.len()).find(|&index| {
            let gap = if placed.len() == 1 {
                range
            } else {
                let before = placed[(index + placed.len() - 1) % placed.len()].0;
                (placed[index].0 + range - before) % range
            };
            gap > range / 2
        });
        match oldest {
            Some(oldest) => {
                placed.rotate_left(oldest);
                placed.into_iter().map(|(_, _, node)| node).collect()
            }
            None => {
                let mut signed: Vec<(i32, T)> = placed
                    .into_iter()
                    .map(|(_, sequence, node)| (sequence, node))
                    .collect();
                signed.sort();
                signed.into_iter().map(|(_, node)| node).collect()
            }
        }
    }
}

impl Default for SequenceWidth {
    fn default() -> Self {
        Self::ZOOKEEPER
    }
}

impl fmt::Display for SequenceWidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bits", self.bits)
    }
}

#[cfg(test)]
mod tests {
    use super::SequenceWidth;

    #[test]
    fn names_are_zookeepers_at_32_bits_and_wrap_early_when_narrower() {
        let zk = SequenceWidth::ZOOKEEPER;
        assert_eq!(zk.suffix(12), "0000000012");
        assert_eq!(zk.suffix(i32::MAX), "2147483647");
        assert_eq!(zk.suffix(i32::MAX.wrapping_add(1)), "-2147483648");
        assert_eq!(zk.suffix(-5), "-000000005");
        let six = SequenceWidth::new(6).unwrap();
        assert_eq!(six.suffix(31), "0000000031");
        assert_eq!(six.suffix(32), "-000000032");
        assert_eq!(six.suffix(63), "-000000001");
        assert_eq!(six.suffix(64), "0000000000");
        assert_eq!(SequenceWidth::new(3), None);
        assert_eq!(SequenceWidth::new(33), None);
    }

    #[test]
    fn the_oldest_comes_first_across_the_wrap() {
        let zk = SequenceWidth::ZOOKEEPER;
        // No wrap: ascending, ties by the other field.
        assert_eq!(
            zk.in_order(vec![(7, "c"), (3, "b"), (3, "a"), (2_000_000_000, "d")]),
            vec!["a", "b", "c", "d"]
        );
        // The holder at the top of the range, waiters after the wrap.
        assert_eq!(
            zk.in_order(vec![
                (i32::MIN + 1, "w2"),
                (i32::MIN, "w1"),
                (i32::MAX, "h")
            ]),
            vec!["h", "w1", "w2"]
        );
        let six = SequenceWidth::new(6).unwrap();
        // The holder just below the wrap, waiters past it; then past the second wrap.
        assert_eq!(
            six.in_order(vec![(-30, "w3"), (30, "h"), (-32, "w2"), (31, "w1")]),
            vec!["h", "w1", "w2", "w3"]
        );
        assert_eq!(
            six.in_order(vec![(2, "w3"), (0, "w2"), (-1, "w1"), (-2, "h")]),
            vec!["h", "w1", "w2", "w3"]
        );
        // Half the range apart: no node is oldest by name; signed order.
        assert_eq!(six.in_order(vec![(0, "a"), (-32, "b")]), vec!["b", "a"]);
        assert_eq!(six.in_order(vec![(5, "b"), (5, "a")]), vec!["a", "b"]);
        assert_eq!(six.in_order(vec![(5, "x")]), vec!["x"]);
    }
}
