//! Pure text helpers shared by the tools: content hashes, Anthropic-style numbered lines,
//! line splitting and timestamps. No IO.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// Lowercase hex sha256 of the raw bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The lines of a text. A final newline ends the last line rather than starting an empty
/// one, so `"a\nb\n"` has 2 lines and `""` has none.
pub fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// The largest index at most `max` (and at most `s.len()`) that starts a character.
pub fn floor_char_boundary(s: &str, max: usize) -> usize {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// `s` whole, or its first `max_chars` characters followed by `…`.
pub fn head_chars(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_owned(),
    }
}

/// The most bytes of a frontmatter `name`, `description` or `type` that a listing or a
/// search hit shows (cut at a character with `…`; `memory_read` shows the block whole):
/// a result page's size then depends on how many memories it shows, not on one long
/// field, and one entry fits the smallest result budget.
pub const SHOWN_FIELD_BYTES: usize = 1_000;

/// A frontmatter field as a listing or a search hit shows it: [`SHOWN_FIELD_BYTES`].
pub fn shown_field(s: Option<String>) -> Option<String> {
    s.map(|s| {
        if s.len() <= SHOWN_FIELD_BYTES {
            return s;
        }
        let cut = floor_char_boundary(&s, SHOWN_FIELD_BYTES - '…'.len_utf8());
        format!("{}…", &s[..cut])
    })
}

/// One numbered line: the number right-aligned in 6 columns, a TAB, the line.
pub fn numbered_line(out: &mut String, number: usize, line: &str) {
    let _ = write!(out, "{number:>6}\t{line}");
}

/// Lines `first..=last` (1-based) of `all`, numbered and joined by `\n`.
pub fn numbered(all: &[&str], first: usize, last: usize) -> String {
    let mut out = String::new();
    for n in first..=last.min(all.len()) {
        if n > first {
            out.push('\n');
        }
        numbered_line(&mut out, n, all[n - 1]);
    }
    out
}

/// RFC 3339 UTC timestamp with seconds, e.g. `2026-11-22T07:21:23Z`.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// RFC 3339 UTC timestamp with milliseconds, e.g. `2026-11-22T07:21:23.042Z`.
pub fn rfc3339_millis(t: SystemTime) -> String {
    let millis = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_millis())
        .unwrap_or(0);
    let mut s = rfc3339(t);
    s.insert_str(s.len() - 1, &format!(".{millis:03}"));
    s
}

/// Whole days from `t` to now (0 for future times).
pub fn age_days(t: SystemTime) -> u64 {
    SystemTime::now()
        .duration_since(t)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or(0)
}

/// Whole days since 1970-01-01 at `t`.
pub fn days_since_epoch(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or(0)
}

/// Seconds since 1970-01-01T00:00:00Z of a date (`2026-03-01`, which means the start of
/// that day in UTC) or an RFC 3339 date-time (`2026-03-01T09:30:00Z`, `…+02:00`, a space
/// for the `T`, fractions of a second ignored; no offset means UTC). `None` if it is
/// neither: callers turn that into their own message.
pub fn parse_instant(s: &str) -> Option<i64> {
    let s = s.trim();
    let num = |t: &str| -> Option<i64> {
        (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| t.parse().ok())
            .flatten()
    };
    let (date, time) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let mut parts = date.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (y, m, d) = (num(y)?, num(m)?, num(d)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days_in = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&m) || d < 1 || d > days_in[m as usize - 1] {
        return None;
    }
    let mut secs = days_from_civil(y, m, d) * 86_400;
    if let Some(time) = time {
        let (clock, offset) = match time.find(['Z', 'z', '+', '-']) {
            Some(i) => (&time[..i], &time[i..]),
            None => (time, ""),
        };
        let clock = clock.split('.').next()?;
        let mut hms = clock.split(':');
        let (h, mi) = (num(hms.next()?)?, num(hms.next()?)?);
        let sec = hms.next().map_or(Some(0), num)?;
        if hms.next().is_some() || h > 23 || mi > 59 || sec > 60 {
            return None;
        }
        secs += h * 3600 + mi * 60 + sec;
        match offset {
            "" | "Z" | "z" => {}
            o => {
                let sign = if o.starts_with('-') { -1 } else { 1 };
                let (oh, om) = o[1..].split_once(':')?;
                let (oh, om) = (num(oh)?, num(om)?);
                if oh > 23 || om > 59 {
                    return None;
                }
                secs -= sign * (oh * 3600 + om * 60);
            }
        }
    }
    Some(secs)
}

/// RFC 3339 UTC timestamp of seconds since the epoch.
pub fn rfc3339_secs(secs: i64) -> String {
    rfc3339(UNIX_EPOCH + std::time::Duration::from_secs(secs.max(0) as u64))
}

/// Seconds since the epoch now.
pub fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn hashes_are_lowercase_hex() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn numbers_lines_like_the_memory_tool() {
        let text = "alpha\nbeta\n";
        assert_eq!(numbered(&lines(text), 1, 2), "     1\talpha\n     2\tbeta");
        assert_eq!(numbered(&lines(text), 2, 99), "     2\tbeta");
        assert_eq!(lines("").len(), 0);
    }

    #[test]
    fn parses_dates_and_date_times() {
        for (text, secs) in [
            ("2026-11-22", Some(1_795_305_600)),
            ("2026-11-22T07:21:23Z", Some(1_795_332_083)),
            ("2026-11-22 07:21:23", Some(1_795_332_083)),
            ("2026-11-22T09:21:23.5+02:00", Some(1_795_332_083)),
            ("2026-11-22T02:21-05:00", Some(1_795_332_060)),
            ("2000-02-29", Some(951_782_400)),
            ("1970-01-01", Some(0)),
            ("2001-02-29", None),
            ("2026-13-01", None),
            ("2026-1-01", None),
            ("next week", None),
            ("2026-11-22T25:00Z", None),
            ("", None),
        ] {
            assert_eq!(parse_instant(text), secs, "{text}");
        }
        assert_eq!(rfc3339_secs(1_795_332_083), "2026-11-22T07:21:23Z");
    }

    #[test]
    fn formats_timestamps() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_332_083);
        assert_eq!(rfc3339(t), "2026-11-22T07:21:23Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
    }
}
