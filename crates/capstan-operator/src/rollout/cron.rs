//! Five-field cron schedules (`minute hour day-of-month month day-of-week`), the syntax of
//! Argo CD's sync windows and of Kubernetes CronJobs: `*`, numbers, ranges `a-b`, steps `*/n`,
//! `a-b/n` and `a/n` (from `a` to the field's end), lists `a,b`, month names `JAN`–`DEC`, day
//! names `SUN`–`SAT` (Sunday is 0 or 7), `?` as `*`, and the shorthands `@yearly`
//! (`@annually`), `@monthly`, `@weekly`, `@daily` (`@midnight`) and `@hourly`.
//!
//! Day of month and day of week: when both are restricted (neither is `*` or `?`; `*/2` is a
//! restriction), a day matches when either does; otherwise both must — the rule of Go's
//! robfig/cron, which Argo CD's sync windows use.

use jiff::civil::{Date, Weekday};

/// A parsed schedule: one bit per allowed value of each field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cron {
    minutes: u64,
    hours: u32,
    days_of_month: u32,
    months: u16,
    days_of_week: u8,
    day_of_month_restricted: bool,
    day_of_week_restricted: bool,
}

/// A schedule that is not a five-field cron expression, with the field and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CronError(pub String);

struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTE: Field = Field {
    name: "minute",
    min: 0,
    max: 59,
    names: &[],
};
const HOUR: Field = Field {
    name: "hour",
    min: 0,
    max: 23,
    names: &[],
};
const DAY_OF_MONTH: Field = Field {
    name: "day of month",
    min: 1,
    max: 31,
    names: &[],
};
const MONTH: Field = Field {
    name: "month",
    min: 1,
    max: 12,
    names: &[
        "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
    ],
};
// 7 is Sunday too; folded onto 0 after parsing.
const DAY_OF_WEEK: Field = Field {
    name: "day of week",
    min: 0,
    max: 7,
    names: &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
};

/// The longest month of each month number (February: 29, in leap years).
const LONGEST_MONTH: [u32; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

impl Cron {
    /// Parses `text`; every problem names the field.
    pub fn parse(text: &str) -> Result<Cron, CronError> {
        let text = text.trim();
        let expanded = match text.to_ascii_lowercase().as_str() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other if other.starts_with('@') => {
                return Err(CronError(format!("unknown shorthand {text:?}")));
            }
            _ => text,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        let [minute, hour, dom, month, dow] = fields.as_slice() else {
            return Err(CronError(format!(
                "{text:?} has {} fields, a schedule has 5: minute hour day-of-month month day-of-week",
                fields.len()
            )));
        };
        let dow_bits = parse_field(dow, &DAY_OF_WEEK)?;
        // Sunday as 7 is Sunday as 0.
        let dow_bits = (dow_bits | (dow_bits >> 7)) & 0x7f;
        Ok(Cron {
            minutes: parse_field(minute, &MINUTE)?,
            hours: bits32(parse_field(hour, &HOUR)?),
            days_of_month: bits32(parse_field(dom, &DAY_OF_MONTH)?),
            months: u16::try_from(parse_field(month, &MONTH)?).unwrap_or(0),
            days_of_week: u8::try_from(dow_bits).unwrap_or(0),
            day_of_month_restricted: restricted(dom),
            day_of_week_restricted: restricted(dow),
        })
    }

    /// Whether the schedule fires on some day of some year. False only for a day of month
    /// no chosen month has (`0 0 30 2 *`); every date recurs on every weekday.
    pub fn ever_fires(&self) -> bool {
        if !self.day_of_month_restricted || self.day_of_week_restricted {
            // Either every day of the chosen months counts, or a weekday alone suffices.
            return true;
        }
        (1..=12).any(|month| {
            self.months & (1 << month) != 0
                && (1..=LONGEST_MONTH[month - 1]).any(|day| self.days_of_month & (1 << day) != 0)
        })
    }

    /// Whether the schedule fires on `date` (at some of its hours and minutes).
    pub fn fires_on(&self, date: Date) -> bool {
        let month = u32::try_from(date.month()).unwrap_or(0);
        if self.months & (1 << month) == 0 {
            return false;
        }
        let day = u32::try_from(date.day()).unwrap_or(0);
        let dom = self.days_of_month & (1 << day) != 0;
        let dow = self.days_of_week & (1 << weekday_number(date.weekday())) != 0;
        if self.day_of_month_restricted && self.day_of_week_restricted {
            dom || dow
        } else {
            dom && dow
        }
    }

    /// The hours and minutes of a day the schedule fires at, in order.
    pub fn times_of_day(&self) -> impl Iterator<Item = (i8, i8)> + '_ {
        (0..24i8)
            .filter(|h| self.hours & (1 << h) != 0)
            .flat_map(move |h| {
                (0..60i8)
                    .filter(|m| self.minutes & (1 << m) != 0)
                    .map(move |m| (h, m))
            })
    }
}

fn weekday_number(day: Weekday) -> u32 {
    u32::try_from(day.to_sunday_zero_offset()).unwrap_or(0)
}

/// Whether a day field restricts the days: anything but `*` or `?` (a step above 1 restricts).
fn restricted(field: &str) -> bool {
    !matches!(field, "*" | "?" | "*/1" | "?/1")
}

fn bits32(bits: u64) -> u32 {
    u32::try_from(bits).unwrap_or(0)
}

/// One field: a comma list of `*`, `?`, values, ranges, each with an optional `/step`.
fn parse_field(text: &str, field: &Field) -> Result<u64, CronError> {
    let bad = |why: String| CronError(format!("{} field {text:?}: {why}", field.name));
    let mut bits = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .map_err(|_| bad(format!("step {step:?} is not a number")))?;
                if step == 0 {
                    return Err(bad("a step of 0".to_string()));
                }
                (range, Some(step))
            }
            None => (part, None),
        };
        let (low, high) = if range == "*" || range == "?" {
            (field.min, field.max)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a, field).map_err(&bad)?, value(b, field).map_err(&bad)?)
        } else {
            let a = value(range, field).map_err(&bad)?;
            // `a/n` runs from a to the field's end.
            (a, if step.is_some() { field.max } else { a })
        };
        if low > high {
            return Err(bad(format!("range {range:?} runs backwards")));
        }
        let mut v = low;
        while v <= high {
            bits |= 1 << v;
            v += step.unwrap_or(1);
        }
    }
    Ok(bits)
}

fn value(text: &str, field: &Field) -> Result<u32, String> {
    let upper = text.to_ascii_uppercase();
    if let Some(i) = field.names.iter().position(|n| *n == upper) {
        let i = u32::try_from(i).unwrap_or(0);
        // Month names count from 1, day names from 0.
        return Ok(if field.min == 1 { i + 1 } else { i });
    }
    let v: u32 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number{}", names_hint(field)))?;
    if v < field.min || v > field.max {
        return Err(format!("{v} is outside {}-{}", field.min, field.max));
    }
    Ok(v)
}

fn names_hint(field: &Field) -> String {
    match field.names {
        [] => String::new(),
        [first, .., last] => format!(" or a name {first}-{last}"),
        [only] => format!(" or {only}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    /// One row per rule: a schedule, a date, whether it fires that day.
    #[test]
    fn which_days_a_schedule_fires_on() {
        // 2026-12-07 is a Monday; 2024-02-29 a Thursday.
        let rows = [
            ("0 22 * * 1-5", date(2026, 12, 7), true),
            ("0 22 * * 1-5", date(2026, 12, 6), false),
            ("0 22 * * MON-FRI", date(2026, 12, 11), true),
            ("0 22 * * 7", date(2026, 12, 6), true),
            ("0 22 * * 0", date(2026, 12, 6), true),
            ("0 22 * * SUN", date(2026, 12, 13), true),
            ("0 0 1 * *", date(2026, 12, 1), true),
            ("0 0 1 * *", date(2026, 12, 2), false),
            // Both restricted: either matches.
            ("0 0 1 * 1", date(2026, 12, 7), true),
            ("0 0 1 * 1", date(2026, 12, 1), true),
            ("0 0 1 * 1", date(2026, 12, 2), false),
            // Day of month starred: the day of week alone decides.
            ("0 0 */1 * 1", date(2026, 12, 2), false),
            ("0 0 */1 * 1", date(2026, 12, 14), true),
            ("0 0 * DEC *", date(2026, 12, 2), true),
            ("0 0 * JAN-NOV *", date(2026, 12, 2), false),
            ("0 0 29 2 *", date(2024, 2, 29), true),
            ("@monthly", date(2026, 12, 1), true),
            ("@weekly", date(2026, 12, 6), true),
            ("@weekly", date(2026, 12, 7), false),
            ("0 0 ? * 1", date(2026, 12, 7), true),
            // A step restricts: 2026-12-02 is an even day of month but a Wednesday.
            ("0 0 */2 * 1", date(2026, 12, 3), true),
            ("0 0 */2 * 1", date(2026, 12, 7), true),
            ("0 0 */2 * 1", date(2026, 12, 2), false),
        ];
        for (schedule, day, fires) in rows {
            let cron = Cron::parse(schedule).unwrap_or_else(|e| panic!("{schedule}: {e}"));
            assert_eq!(cron.fires_on(day), fires, "{schedule} on {day}");
        }
    }

    #[test]
    fn times_of_day_in_order() {
        let cron = Cron::parse("15,45 9-10 * * *").expect("parses");
        let times: Vec<_> = cron.times_of_day().collect();
        assert_eq!(times, [(9, 15), (9, 45), (10, 15), (10, 45)]);
        let cron = Cron::parse("*/20 */12 * * *").expect("parses");
        let times: Vec<_> = cron.times_of_day().collect();
        assert_eq!(times, [(0, 0), (0, 20), (0, 40), (12, 0), (12, 20), (12, 40)]);
        let cron = Cron::parse("50/5 23 * * *").expect("parses");
        assert_eq!(cron.times_of_day().collect::<Vec<_>>(), [(23, 50), (23, 55)]);
    }

    #[test]
    fn schedules_that_never_fire() {
        let rows = [
            ("0 0 30 2 *", false),
            ("0 0 31 4,6,9,11 *", false),
            ("0 0 31 4,5 *", true),
            ("0 0 29 2 *", true),
            ("0 0 30 2 1", true),
            ("0 22 * * 1-5", true),
        ];
        for (schedule, fires) in rows {
            let cron = Cron::parse(schedule).expect("parses");
            assert_eq!(cron.ever_fires(), fires, "{schedule}");
        }
    }

    #[test]
    fn bad_schedules_say_which_field_and_why() {
        let rows = [
            ("0 22 * *", "\"0 22 * *\" has 4 fields, a schedule has 5"),
            ("60 22 * * *", "minute field \"60\": 60 is outside 0-59"),
            ("0 24 * * *", "hour field \"24\": 24 is outside 0-23"),
            ("0 0 0 * *", "day of month field \"0\": 0 is outside 1-31"),
            ("0 0 * 13 *", "month field \"13\": 13 is outside 1-12"),
            ("0 0 * * 8", "day of week field \"8\": 8 is outside 0-7"),
            (
                "0 0 * FOO *",
                "month field \"FOO\": \"FOO\" is not a number or a name JAN-DEC",
            ),
            ("*/0 * * * *", "minute field \"*/0\": a step of 0"),
            ("0 5-1 * * *", "hour field \"5-1\": range \"5-1\" runs backwards"),
            ("@sometimes", "unknown shorthand \"@sometimes\""),
            ("0 x/2 * * *", "hour field \"x/2\": \"x\" is not a number"),
        ];
        for (schedule, why) in rows {
            let error = Cron::parse(schedule).expect_err(schedule).to_string();
            assert!(error.starts_with(why), "{schedule}: {error}");
        }
    }
}
