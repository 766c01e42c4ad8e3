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

    /// The digest of a value's serialized structure: what JSON would hold, fed to the hasher
    /// as words without formatting it ([`WordSerializer`]). A history digest is taken once
    /// per run over tens of thousands of records; formatting them as JSON only to hash the
    /// text cost about a tenth of a whole lock scenario's run.
    pub fn of_structure<T: Serialize + ?Sized>(value: &T) -> Self {
        let mut serializer = WordSerializer {
            state: FNV_OFFSET_BASIS,
        };
        value
            .serialize(&mut serializer)
            .expect("hashing a serialization cannot fail");
        Digest(mix64(serializer.state))
    }
}

/// A serde serializer that feeds a value's structure into an FNV-style hash, a 64-bit word at
/// a time: numbers as words, strings as their length and then their bytes in words, enum
/// variants by index, options and sequences with their tags and lengths, and an end marker
/// after every sequence, map and struct. Field names are left out: a type's fields come in
/// one order, so they add nothing — except for maps, whose keys are hashed as values.
struct WordSerializer {
    state: u64,
}

/// Marks the end of a sequence, map or struct, so that nesting cannot be confused.
const END_WORD: u64 = 0x9e37_79b9_7f4a_7c15;

impl WordSerializer {
    fn word(&mut self, word: u64) {
        self.state = (self.state ^ word).wrapping_mul(FNV_PRIME);
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.word(bytes.len() as u64);
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.word(u64::from_le_bytes(chunk.try_into().expect("eight bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(last));
        }
    }
}

/// Hashing never fails; serde asks for an error type all the same.
#[derive(Debug)]
struct NeverFails;

impl fmt::Display for NeverFails {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a type refused to serialize")
    }
}

impl std::error::Error for NeverFails {}

impl serde::ser::Error for NeverFails {
    fn custom<T: fmt::Display>(_: T) -> Self {
        NeverFails
    }
}

macro_rules! words {
    ($($method:ident: $ty:ty => |$this:ident, $value:ident| $body:expr;)*) => {
        $(fn $method(self, $value: $ty) -> Result<(), NeverFails> {
            let $this = self;
            $body;
            Ok(())
        })*
    };
}

impl<'a> serde::Serializer for &'a mut WordSerializer {
    type Ok = ();
    type Error = NeverFails;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    words! {
        serialize_bool: bool => |this, value| this.word(u64::from(value));
        serialize_i8: i8 => |this, value| this.word(value as u64);
        serialize_i16: i16 => |this, value| this.word(value as u64);
        serialize_i32: i32 => |this, value| this.word(value as u64);
        serialize_i64: i64 => |this, value| this.word(value as u64);
        serialize_u8: u8 => |this, value| this.word(u64::from(value));
        serialize_u16: u16 => |this, value| this.word(u64::from(value));
        serialize_u32: u32 => |this, value| this.word(u64::from(value));
        serialize_u64: u64 => |this, value| this.word(value);
        serialize_f32: f32 => |this, value| this.word(u64::from(value.to_bits()));
        serialize_f64: f64 => |this, value| this.word(value.to_bits());
        serialize_char: char => |this, value| this.word(u64::from(value));
        serialize_str: &str => |this, value| this.bytes(value.as_bytes());
        serialize_bytes: &[u8] => |this, value| this.bytes(value);
        serialize_unit_struct: &'static str => |this, _name| this.word(END_WORD);
    }

    fn serialize_i128(self, value: i128) -> Result<(), NeverFails> {
        self.word(value as u64);
        self.word((value >> 64) as u64);
        Ok(())
    }

    fn serialize_u128(self, value: u128) -> Result<(), NeverFails> {
        self.word(value as u64);
        self.word((value >> 64) as u64);
        Ok(())
    }

    fn serialize_none(self) -> Result<(), NeverFails> {
        self.word(0);
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), NeverFails> {
        self.word(1);
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), NeverFails> {
        self.word(END_WORD);
        Ok(())
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
    ) -> Result<(), NeverFails> {
        self.word(u64::from(index));
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), NeverFails> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        value: &T,
    ) -> Result<(), NeverFails> {
        self.word(u64::from(index));
        value.serialize(self)
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self, NeverFails> {
        self.word(len.map_or(u64::MAX, |len| len as u64));
        Ok(self)
    }

    fn serialize_tuple(self, len: usize) -> Result<Self, NeverFails> {
        self.word(len as u64);
        Ok(self)
    }

    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Self, NeverFails> {
        self.word(len as u64);
        Ok(self)
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        len: usize,
    ) -> Result<Self, NeverFails> {
        self.word(u64::from(index));
        self.word(len as u64);
        Ok(self)
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self, NeverFails> {
        self.word(len.map_or(u64::MAX, |len| len as u64));
        Ok(self)
    }

    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Self, NeverFails> {
        self.word(len as u64);
        Ok(self)
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        len: usize,
    ) -> Result<Self, NeverFails> {
        self.word(u64::from(index));
        self.word(len as u64);
        Ok(self)
    }
}

macro_rules! compound {
    ($($trait:ident: $method:ident;)*) => {
        $(impl serde::ser::$trait for &mut WordSerializer {
            type Ok = ();
            type Error = NeverFails;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), NeverFails> {
                value.serialize(&mut **self)
            }

            fn end(self) -> Result<(), NeverFails> {
                self.word(END_WORD);
                Ok(())
            }
        })*
    };
}

compound! {
    SerializeSeq: serialize_element;
    SerializeTuple: serialize_element;
    SerializeTupleStruct: serialize_field;
    SerializeTupleVariant: serialize_field;
}

impl serde::ser::SerializeMap for &mut WordSerializer {
    type Ok = ();
    type Error = NeverFails;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), NeverFails> {
        key.serialize(&mut **self)
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), NeverFails> {
        value.serialize(&mut **self)
    }

    fn end(self) -> Result<(), NeverFails> {
        self.word(END_WORD);
        Ok(())
    }
}

macro_rules! fields {
    ($($trait:ident;)*) => {
        $(impl serde::ser::$trait for &mut WordSerializer {
            type Ok = ();
            type Error = NeverFails;

            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                _key: &'static str,
                value: &T,
            ) -> Result<(), NeverFails> {
                value.serialize(&mut **self)
            }

            fn skip_field(&mut self, _key: &'static str) -> Result<(), NeverFails> {
                // A skipped field still takes its place, so that a value moving from one
                // optional field to the next changes the digest.
                self.word(END_WORD.rotate_left(1));
                Ok(())
            }

            fn end(self) -> Result<(), NeverFails> {
                self.word(END_WORD);
                Ok(())
            }
        })*
    };
}

fields! {
    SerializeStruct;
    SerializeStructVariant;
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
    fn the_structure_digest_tells_apart_what_json_tells_apart() {
        #[derive(Serialize)]
        struct Pair {
            first: Option<String>,
            second: Option<String>,
        }
        let digest = |first: Option<&str>, second: Option<&str>| {
            Digest::of_structure(&Pair {
                first: first.map(str::to_string),
                second: second.map(str::to_string),
            })
        };
        let all = [
            digest(None, None),
            digest(Some(""), None),
            digest(None, Some("")),
            digest(Some("ab"), Some("c")),
            digest(Some("a"), Some("bc")),
            digest(Some("abcdefgh"), None),
            digest(Some("abcdefgh\0"), None),
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(digest(Some("x"), None), digest(Some("x"), None));
        assert_eq!(
            Digest::of_structure(&vec![vec![1u64], vec![]]),
            Digest::of_structure(&vec![vec![1u64], vec![]])
        );
        assert_ne!(
            Digest::of_structure(&vec![vec![1u64], vec![]]),
            Digest::of_structure(&vec![vec![], vec![1u64]])
        );
    }

    #[test]
    fn digest_round_trips_through_text() {
        let digest = Digest::of_bytes(b"coordsim");
        let text = digest.to_string();
        assert_eq!(text.len(), 16);
        assert_eq!(Digest::try_from(text).unwrap(), digest);
    }
}
