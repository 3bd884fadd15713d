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
