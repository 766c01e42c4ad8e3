//! Transaction ids: `(epoch, counter)`, ordered epoch first.

use std::fmt;

/// A ZAB transaction id: the epoch of the leader that proposed it and a counter within that
/// epoch. Ordered by epoch, then counter; `as_u64` packs it as ZooKeeper does
/// (`epoch << 32 | counter`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Zxid {
    /// The epoch of the leader that proposed the transaction.
    pub epoch: u32,
    /// Position within the epoch, from 1.
    pub counter: u32,
}

impl Zxid {
    /// The zxid before every transaction.
    pub const ZERO: Zxid = Zxid {
        epoch: 0,
        counter: 0,
    };

    /// The zxid `(epoch, counter)`.
    pub const fn new(epoch: u32, counter: u32) -> Self {
        Self { epoch, counter }
    }

    /// ZooKeeper's 64-bit form, `epoch << 32 | counter`.
    pub const fn as_u64(self) -> u64 {
        ((self.epoch as u64) << 32) | self.counter as u64
    }

    /// The zxid packed in `value` (see [`Zxid::as_u64`]).
    pub const fn from_u64(value: u64) -> Self {
        Self {
            epoch: (value >> 32) as u32,
            counter: value as u32,
        }
    }
}

impl fmt::Display for Zxid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({},{})", self.epoch, self.counter)
    }
}

impl fmt::Debug for Zxid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_epoch_then_counter_and_packs_like_zookeeper() {
        assert!(Zxid::new(1, 9) < Zxid::new(2, 1));
        assert!(Zxid::new(2, 1) < Zxid::new(2, 2));
        assert_eq!(Zxid::new(2, 5).as_u64(), 0x2_0000_0005);
        assert_eq!(Zxid::from_u64(0x2_0000_0005), Zxid::new(2, 5));
        assert!(Zxid::new(1, 9).as_u64() < Zxid::new(2, 1).as_u64());
    }
}
