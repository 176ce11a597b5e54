//! Timestamps as records store them: whole seconds, UTC, written `YYYY-MM-DDTHH:MM:SSZ`.
//!
//! Records carry time as text, so the format is fixed here and nowhere else. The conversion is the
//! proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`), which is exact for every year
//! from 0000 to 9999; nothing outside that range can be written or parsed.

use std::fmt;

/// Seconds since the Unix epoch, UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(into = "String")]
pub struct Timestamp(pub i64);

impl From<Timestamp> for String {
    fn from(t: Timestamp) -> String {
        t.to_string()
    }
}

const MIN_SECONDS: i64 = -62_167_219_200; // 0000-01-01T00:00:00Z
const MAX_SECONDS: i64 = 253_402_300_799; // 9999-12-31T23:59:59Z

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

impl Timestamp {
    /// Parse the record format `YYYY-MM-DDTHH:MM:SSZ`, or a bare date `YYYY-MM-DD` (midnight UTC).
    pub fn parse(s: &str) -> Option<Timestamp> {
        let b = s.as_bytes();
        let num = |r: std::ops::Range<usize>| -> Option<i64> {
            let part = b.get(r)?;
            if part.iter().all(u8::is_ascii_digit) {
                std::str::from_utf8(part).ok()?.parse().ok()
            } else {
                None
            }
        };
        let (y, mo, d) = match b.len() {
            10 | 20 if b.get(4) == Some(&b'-') && b.get(7) == Some(&b'-') => (num(0..4)?, num(5..7)?, num(8..10)?),
            _ => return None,
        };
        let (h, mi, sec) = if b.len() == 20 {
            if b[10] != b'T' || b[13] != b':' || b[16] != b':' || b[19] != b'Z' {
                return None;
            }
            (num(11..13)?, num(14..16)?, num(17..19)?)
        } else {
            (0, 0, 0)
        };
        let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let month_len = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        if !(1..=12).contains(&mo) || d < 1 || d > month_len[(mo - 1) as usize] || h > 23 || mi > 59 || sec > 59 {
            return None;
        }
        Some(Timestamp(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec))
    }

    /// Whether the value can be written in the four-digit-year record format.
    pub fn in_range(self) -> bool {
        (MIN_SECONDS..=MAX_SECONDS).contains(&self.0)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.0.clamp(MIN_SECONDS, MAX_SECONDS);
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        write!(f, "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, (rem % 3600) / 60, rem % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_across_the_calendar() {
        for secs in [0, 1, 951_782_400, 1_700_000_000, 1_795_963_382, MIN_SECONDS, MAX_SECONDS, -86_401] {
            let t = Timestamp(secs);
            assert_eq!(Timestamp::parse(&t.to_string()), Some(t), "{t}");
        }
        assert_eq!(Timestamp(0).to_string(), "1970-01-01T00:00:00Z");
        assert_eq!(Timestamp(951_782_400).to_string(), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn rejects_malformed_times() {
        for bad in [
            "",
            "2026-13-01",
            "2026-02-30",
            "2025-02-29",
            "2026-01-01T24:00:00Z",
            "2026-01-01 00:00:00Z",
            "26-01-01",
            "2026-01-01T00:00:00+01:00",
        ] {
            assert_eq!(Timestamp::parse(bad), None, "{bad}");
        }
        assert_eq!(Timestamp::parse("2024-02-29").map(|t| t.to_string()).as_deref(), Some("2024-02-29T00:00:00Z"));
    }
}
