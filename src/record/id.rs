//! Record identity: the BLAKE3 hash of a record file's exact bytes, shown as lowercase hex.
//!
//! Identity is computed from bytes only, never from a re-serialised form, so a verifier and a
//! writer agree without sharing a serializer.

use serde::Serialize;
use std::fmt;

/// The id of a record: 32 bytes of BLAKE3 over the file's bytes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct RecordId(pub [u8; 32]);

/// Hashed by its first eight bytes: they are BLAKE3 output, as evenly spread as all 32, and a
/// warm recall looks ids up in maps and sets of every record thousands of times (a live
/// session's pin for each constraint, the fold's entries), hashing one word instead of four.
/// The maps keep std's keyed hasher, so records made to collide in them would each need eight
/// equal bytes of BLAKE3 output.
impl std::hash::Hash for RecordId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let [a, b, c, d, e, f, g, h, ..] = self.0;
        state.write_u64(u64::from_le_bytes([a, b, c, d, e, f, g, h]));
    }
}

/// How many hex digits a short id shows by default.
pub const SHORT_LEN: usize = 12;

/// The fewest hex digits accepted as an id prefix.
pub const MIN_PREFIX_LEN: usize = 4;

impl RecordId {
    /// Hash `bytes` into an id.
    pub fn of_bytes(bytes: &[u8]) -> RecordId {
        RecordId(*blake3::hash(bytes).as_bytes())
    }

    /// The full 64-digit lowercase hex form.
    pub fn to_hex(&self) -> String {
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push(char::from_digit(u32::from(b >> 4), 16).expect("nibble < 16"));
            s.push(char::from_digit(u32::from(b & 15), 16).expect("nibble < 16"));
        }
        s
    }

    /// The short form used in human output.
    pub fn short(&self) -> String {
        self.to_hex()[..SHORT_LEN].to_string()
    }

    /// Parse a full 64-digit lowercase hex id.
    pub fn from_hex(s: &str) -> Option<RecordId> {
        if s.len() != 64 || !is_lower_hex(s) {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, chunk) in s.as_bytes().chunks(2).enumerate() {
            let hi = (chunk[0] as char).to_digit(16)?;
            let lo = (chunk[1] as char).to_digit(16)?;
            out[i] = (hi * 16 + lo) as u8;
        }
        Some(RecordId(out))
    }
}

/// Whether `s` is non-empty lowercase hexadecimal.
pub fn is_lower_hex(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RecordId({})", self.short())
    }
}

impl Serialize for RecordId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_known_hash() {
        let id = RecordId::of_bytes(b"");
        assert_eq!(id.to_hex(), "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262");
        assert_eq!(RecordId::from_hex(&id.to_hex()), Some(id));
        assert_eq!(id.short(), "af1349b9f5f9");
        assert_eq!(RecordId::from_hex("AF1349B9F5F9A1A6A0404DEA36DCC9499BCB25C9ADC112B7CC9A93CAE41F3262"), None);
        assert_eq!(RecordId::from_hex("af13"), None);
    }
}
