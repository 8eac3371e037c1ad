//! A report's range: store-local calendar dates cut into periods, each mapped to the UTC
//! instants where its days begin.

use chrono::{Datelike, Duration, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;

use super::model::{Interval, SeriesPoint, Totals};
use super::store::Bucket;
use crate::error::AppError;

/// The longest range, in days (a leap year).
pub const MAX_DAYS: i64 = 366;
/// The range when none is given: the last 30 days, today included.
pub const DEFAULT_DAYS: i64 = 30;

/// A checked range: `from..=to` in the store's zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub from: NaiveDate,
    pub to: NaiveDate,
    pub tz: Tz,
}

fn date(field: &str, v: &str) -> Result<NaiveDate, AppError> {
    // Four-digit years only: the format the API promises, and no day a timestamp cannot hold.
    NaiveDate::parse_from_str(v, "%Y-%m-%d")
        .ok()
        .filter(|d| v.len() == 10 && (1970..=9998).contains(&d.year()))
        .ok_or_else(|| AppError::field(field, "must be a date, YYYY-MM-DD"))
}

impl Range {
    /// Checks `from` and `to` (422 `validation_failed`): real dates, `from` not after `to`,
    /// at most [`MAX_DAYS`] days. `to` defaults to today in the store's zone, `from` to 29
    /// days before `to`.
    pub fn parse(
        from: Option<&str>,
        to: Option<&str>,
        tz: Tz,
        now: chrono::DateTime<Utc>,
    ) -> Result<Self, AppError> {
        let from = from.map(|v| date("from", v)).transpose()?;
        let to = match to {
            Some(v) => date("to", v)?,
            None => now.with_timezone(&tz).date_naive(),
        };
        let from = from.unwrap_or(to - Duration::days(DEFAULT_DAYS - 1));
        if from > to {
            return Err(AppError::field("from", "must not be after to"));
        }
        if (to - from).num_days() + 1 > MAX_DAYS {
            return Err(AppError::field(
                "to",
                format!("a range is at most {MAX_DAYS} days"),
            ));
        }
        Ok(Self { from, to, tz })
    }

    /// The UTC instant (Unix seconds) where local day `d` begins: its midnight, or the first
    /// quarter hour after a daylight-saving gap that skipped midnight.
    pub fn day_start(&self, d: NaiveDate) -> i64 {
        let midnight = d.and_hms_opt(0, 0, 0).unwrap_or_default();
        (0..=24 * 4)
            .find_map(|q| {
                self.tz
                    .from_local_datetime(&(midnight + Duration::minutes(15 * q)))
                    .earliest()
            })
            .map_or_else(|| midnight.and_utc().timestamp(), |t| t.timestamp())
    }

    /// `[start, end)` of the whole range in Unix seconds.
    pub fn instants(&self) -> (i64, i64) {
        (
            self.day_start(self.from),
            self.day_start(self.to + Duration::days(1)),
        )
    }

    /// The first day of each period of the range, from `from`: the days, or each Monday or
    /// 1st of the month after it.
    pub fn periods(&self, interval: Interval) -> Vec<NaiveDate> {
        let mut out = vec![self.from];
        let mut d = self.from + Duration::days(1);
        while d <= self.to {
            let starts = match interval {
                Interval::Day => true,
                Interval::Week => d.weekday() == chrono::Weekday::Mon,
                Interval::Month => d.day() == 1,
            };
            if starts {
                out.push(d);
            }
            d += Duration::days(1);
        }
        out
    }
}

/// `revenue / orders`, rounded half up; 0 without orders.
fn average(revenue: i64, orders: i64) -> i64 {
    if orders == 0 {
        0
    } else {
        (2 * revenue + orders).div_euclid(2 * orders)
    }
}

impl Range {
    /// Sums the range's quarter hours (in time order) into its periods and the totals; every
    /// period is present, empty ones with zeros.
    pub fn summarize(&self, interval: Interval, buckets: &[Bucket]) -> (Totals, Vec<SeriesPoint>) {
        let starts = self.periods(interval);
        let mut ends: Vec<i64> = starts.iter().skip(1).map(|d| self.day_start(*d)).collect();
        ends.push(self.instants().1);
        let mut sums = vec![[0i64; 4]; starts.len()];
        let mut p = 0;
        for (bucket, counts) in buckets {
            while p + 1 < ends.len() && *bucket >= ends[p] {
                p += 1;
            }
            for (s, c) in sums[p].iter_mut().zip(counts) {
                *s += c;
            }
        }
        let mut all = [0i64; 4];
        let series = starts
            .iter()
            .zip(&sums)
            .map(|(d, s)| {
                for (a, c) in all.iter_mut().zip(s) {
                    *a += c;
                }
                SeriesPoint {
                    start: d.to_string(),
                    orders: s[0],
                    revenue_cents: s[1],
                    refunds_cents: s[2],
                    average_order_cents: average(s[1], s[0]),
                    new_customers: s[3],
                }
            })
            .collect();
        let totals = Totals {
            orders: all[0],
            revenue_cents: all[1],
            refunds_cents: all[2],
            average_order_cents: average(all[1], all[0]),
            new_customers: all[3],
        };
        (totals, series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> chrono::DateTime<Utc> {
        crate::time::parse(s).unwrap()
    }

    #[test]
    fn ranges_default_to_the_last_30_local_days_and_refuse_bad_dates() {
        let sp: Tz = "America/Sao_Paulo".parse().unwrap();
        // 01:00 UTC is still the day before in São Paulo.
        let r = Range::parse(None, None, sp, at("2026-03-10T01:00:00Z")).unwrap();
        assert_eq!(r.to.to_string(), "2026-03-09");
        assert_eq!(r.from.to_string(), "2026-02-08");
        for (f, t) in [
            (Some("2026-13-01"), None),
            (Some("2026-1-01"), None),
            (None, Some("yesterday")),
            (Some("2026-03-02"), Some("2026-03-01")),
            (Some("2025-01-01"), Some("2026-01-02")),
            (Some("+12026-01-01"), None),
        ] {
            assert!(
                Range::parse(f, t, sp, at("2026-03-10T01:00:00Z")).is_err(),
                "{f:?} {t:?}"
            );
        }
        assert!(Range::parse(Some("2024-01-01"), Some("2024-12-31"), sp, Utc::now()).is_ok());
    }

    #[test]
    fn days_begin_at_local_midnight_or_after_a_gap() {
        let sp: Tz = "America/Sao_Paulo".parse().unwrap();
        let d = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        let r = Range::parse(Some("2026-03-01"), Some("2026-03-31"), sp, Utc::now()).unwrap();
        assert_eq!(
            r.day_start(d("2026-03-01")),
            at("2026-03-01T03:00:00Z").timestamp()
        );
        // 2018-11-04: São Paulo's clocks jumped from 00:00 to 01:00.
        assert_eq!(
            r.day_start(d("2018-11-04")),
            at("2018-11-04T03:00:00Z").timestamp()
        );
        let kolkata: Tz = "Asia/Kolkata".parse().unwrap();
        let k = Range { tz: kolkata, ..r };
        assert_eq!(
            k.day_start(d("2026-03-01")),
            at("2026-02-28T18:30:00Z").timestamp()
        );
        let w = Range::parse(Some("2026-03-04"), Some("2026-03-17"), sp, Utc::now()).unwrap();
        let starts: Vec<String> = w
            .periods(Interval::Week)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(starts, ["2026-03-04", "2026-03-09", "2026-03-16"]);
        let m = Range::parse(Some("2026-01-15"), Some("2026-03-01"), sp, Utc::now()).unwrap();
        assert_eq!(m.periods(Interval::Month).len(), 3);
    }

    #[test]
    fn quarter_hours_fall_into_their_local_periods() {
        let sp: Tz = "America/Sao_Paulo".parse().unwrap();
        let r = Range::parse(Some("2026-03-01"), Some("2026-03-02"), sp, Utc::now()).unwrap();
        let q = |s: &str| at(s).timestamp();
        let buckets = [
            (q("2026-03-01T03:00:00Z"), [1, 100, 0, 1]),
            (q("2026-03-02T02:45:00Z"), [1, 201, 5, 0]),
            (q("2026-03-02T03:00:00Z"), [1, 300, 0, 2]),
        ];
        let (totals, series) = r.summarize(Interval::Day, &buckets);
        assert_eq!((series[0].orders, series[0].revenue_cents), (2, 301));
        assert_eq!(series[0].average_order_cents, 151);
        assert_eq!((series[1].orders, series[1].new_customers), (1, 2));
        assert_eq!(
            totals,
            Totals {
                orders: 3,
                revenue_cents: 601,
                refunds_cents: 5,
                average_order_cents: 200,
                new_customers: 3
            }
        );
        assert_eq!(average(0, 0), 0);
    }
}
