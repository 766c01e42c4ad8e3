//! Stable 64-bit digests (FNV-1a), identical on every platform and Rust version.
//!
//! std's `DefaultHasher` makes no stability promise, so anything that is printed, compared
//! across runs or used to derive randomness goes through this hasher instead.

use serde::{Deserialize, Serialize};
use std::fmt;

const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// An FNV-1a hasher; also an [`std::io::Write`] sink so serializers can stream into it.
#[derive(Clone, Debug)]
pub struct StableHasher {
    state: u64,
}

impl Default for StableHasher {
    fn default() -> Self {
        Self {
            state: FNV_OFFSET_BASIS,
        }
    }
}

impl StableHasher {
    /// A hasher in its initial state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes.
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.state ^= u64::from(byte);
            self.state = self.state.wrapping_mul(FNV_PRIME);
        }
    }

    /// Feeds a `u64` in little-endian byte order.
    pub fn write_u64(&mut self, value: u64) {
        self.write_bytes(&value.to_le_bytes());
    }

    /// The digest of everything fed so far.
    pub fn finish(&self) -> Digest {
        Digest(self.state)
    }
}

impl std::io::Write for StableHasher {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.write_bytes(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The digest of some bytes: printed as 16 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Digest(pub u64);

impl Digest {
    /// The digest of `bytes`.
    pub fn of_bytes(bytes: &[u8]) -> Self {
        let mut hasher = StableHasher::new();
        hasher.write_bytes(bytes);
        hasher.finish()
    }

    /// The digest of a value's JSON serialization.
    pub fn of_json<T: Serialize + ?Sized>(value: &T) -> Self {
        let mut hasher = StableHasher::new();
        serde_json::to_writer(&mut hasher, value).expect("serializing to a hasher cannot fail");
        hasher.finish()
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

impl From<Digest> for String {
    fn from(digest: Digest) -> Self {
        digest.to_string()
    }
}

impl TryFrom<String> for Digest {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        u64::from_str_radix(&text, 16)
            .map(Digest)
            .map_err(|_| format!("invalid digest `{text}`: expected 16 hex digits"))
    }
}

/// SplitMix64's finalizer: a bijective mix used to derive stream keys.
pub(crate) fn mix64(mut value: u64) -> u64 {
    value = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    value = (value ^ (value >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    value ^ (value >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_reference_vectors() {
        // Reference values of 64-bit FNV-1a.
        assert_eq!(Digest::of_bytes(b"").0, 0xcbf29ce484222325);
        assert_eq!(Digest::of_bytes(b"a").0, 0xaf63dc4c8601ec8c);
        assert_eq!(Digest::of_bytes(b"foobar").0, 0x85944171f73967e8);
    }

    #[test]
    fn digest_round_trips_through_text() {
        let digest = Digest::of_bytes(b"coordsim");
        let text = digest.to_string();
        assert_eq!(text.len(), 16);
        assert_eq!(Digest::try_from(text).unwrap(), digest);
    }
}
