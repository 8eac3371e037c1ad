//! Timestamps (spec 2.1): stored as fixed-width RFC 3339 UTC text, so string order is time
//! order in SQLite; rendered with `Z`; requests may carry any offset.

use chrono::{DateTime, Datelike, SecondsFormat, Utc};

/// The one storage and wire format: `2026-11-21T06:14:49.123456Z` (always 6 fraction digits).
pub fn format(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Parses a stored or client timestamp with any offset into UTC. None also when its UTC year
/// is outside 0000 to 9999 (`9999-12-31T23:59:59-03:00` is in 10000): the storage format has
/// four-digit years, and `+10000-...` would sort before every other time ("due now").
pub fn parse(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
        .filter(|t| (0..=9999).contains(&t.year()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_format_sorts_as_time() {
        let a = parse("2026-01-01T00:00:00Z").unwrap();
        let b = parse("2026-01-01T00:00:00.5Z").unwrap();
        let c = parse("2026-01-01T01:00:00+00:30").unwrap();
        let (fa, fb, fc) = (format(a), format(b), format(c));
        assert_eq!(fa, "2026-01-01T00:00:00.000000Z");
        assert!(fa < fb && fb < fc, "{fa} {fb} {fc}");
        assert_eq!(fc, "2026-01-01T00:30:00.000000Z");
    }

    #[test]
    fn a_time_outside_four_digit_utc_years_is_refused() {
        assert!(parse("9999-12-31T23:59:59-03:00").is_none());
        assert!(parse("0000-01-01T00:00:00+01:00").is_none());
        let last = parse("9999-12-31T23:59:59Z").unwrap();
        let first = parse("0000-01-01T00:00:00Z").unwrap();
        assert!(format(first) < format(last));
        assert!(format(last) > format(parse("2026-11-29T00:00:00Z").unwrap()));
    }
}
