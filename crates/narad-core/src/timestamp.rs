//! ISO-8601 / RFC 3339 UTC timestamps, checked without a date library.

/// True when `s` is an RFC 3339 `date-time` in UTC: `YYYY-MM-DDTHH:MM:SS[.frac]`
/// followed by `Z` (or `z`, or the zero offset `+00:00`).
///
/// ```
/// use narad_core::timestamp::is_utc_timestamp;
/// assert!(is_utc_timestamp("2026-08-05T00:00:00Z"));
/// assert!(is_utc_timestamp("2026-08-05T00:00:00.125Z"));
/// assert!(!is_utc_timestamp("2026-08-05T00:00:00+05:00"));
/// assert!(!is_utc_timestamp("2026-02-30T00:00:00Z"));
/// ```
pub fn is_utc_timestamp(s: &str) -> bool {
    parse(s).is_some_and(|offset| offset == Offset::Utc)
}

/// True when `s` is an RFC 3339 `date-time` with any offset.
pub fn is_rfc3339(s: &str) -> bool {
    parse(s).is_some()
}

#[derive(Debug, PartialEq, Eq)]
enum Offset {
    Utc,
    Other,
}

fn parse(s: &str) -> Option<Offset> {
    let b = s.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |from: usize, len: usize| -> Option<u32> {
        let part = b.get(from..from + len)?;
        part.iter().try_fold(0u32, |acc, c| {
            c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
        })
    };
    let year = num(0, 4)?;
    let month = num(5, 2)?;
    let day = num(8, 2)?;
    let hour = num(11, 2)?;
    let minute = num(14, 2)?;
    let second = num(17, 2)?;
    if b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    match &b[i..] {
        b"Z" | b"z" => Some(Offset::Utc),
        rest if rest.len() == 6 && matches!(rest[0], b'+' | b'-') && rest[3] == b':' => {
            let oh = num(i + 1, 2)?;
            let om = num(i + 4, 2)?;
            if oh > 23 || om > 59 {
                return None;
            }
            if rest[0] == b'+' && oh == 0 && om == 0 {
                Some(Offset::Utc)
            } else {
                Some(Offset::Other)
            }
        }
        _ => None,
    }
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leap_days_follow_the_gregorian_rule() {
        assert!(is_utc_timestamp("2024-02-29T00:00:00Z"));
        assert!(!is_utc_timestamp("2023-02-29T00:00:00Z"));
        assert!(!is_utc_timestamp("1900-02-29T00:00:00Z"));
        assert!(is_utc_timestamp("2000-02-29T00:00:00Z"));
    }

    #[test]
    fn malformed_shapes_are_refused() {
        for s in [
            "",
            "2026-08-05",
            "2026-08-05T00:00:00",
            "2026-08-05 00:00:00Z",
            "2026-08-05T24:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-08-05T00:00:00.Z",
            "2026-08-05T00:00:00Zjunk",
            "２026-08-05T00:00:00Z",
        ] {
            assert!(!is_rfc3339(s), "{s}");
        }
        assert!(is_rfc3339("2026-08-05T00:00:00-07:00"));
        assert!(!is_utc_timestamp("2026-08-05T00:00:00-07:00"));
        assert!(is_utc_timestamp("2026-08-05t00:00:00+00:00"));
    }
}
