//! Go's `time.Time` as templates see it: an instant with a zone, Go's layout-based `Format`
//! and `Parse`, and the `String()` form.

use super::zone::Zone;

/// An instant (`unix` seconds + `nanos`) viewed in `zone`.
#[derive(Clone, Debug)]
pub struct GoTime {
    pub unix: i64,
    pub nanos: u32,
    pub zone: Zone,
}

/// Civil date and time fields in the time's zone.
pub struct Civil {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub weekday: u32,
    pub yday: u32,
    pub offset: i32,
    pub abbrev: String,
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian.
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

/// (year, month, day) → days since 1970-01-01.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

pub fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

impl GoTime {
    pub fn civil(&self) -> Civil {
        let (offset, abbrev) = self.zone.lookup(self.unix);
        let local = self.unix + i64::from(offset);
        let days = local.div_euclid(86_400);
        let secs = local.rem_euclid(86_400) as u32;
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            hour: secs / 3600,
            minute: secs / 60 % 60,
            second: secs % 60,
            weekday: (days + 4).rem_euclid(7) as u32,
            yday: (days - days_from_civil(year, 1, 1) + 1) as u32,
            offset,
            abbrev: abbrev.to_string(),
        }
    }

    pub fn in_zone(&self, zone: Zone) -> GoTime {
        GoTime { zone, ..self.clone() }
    }

    /// Adds a duration in nanoseconds.
    pub fn add(&self, d: i64) -> GoTime {
        let total = i128::from(self.nanos) + i128::from(d.rem_euclid(1_000_000_000));
        let secs = self.unix + d.div_euclid(1_000_000_000) + (total / 1_000_000_000) as i64;
        GoTime {
            unix: secs,
            nanos: (total % 1_000_000_000) as u32,
            zone: self.zone.clone(),
        }
    }

    /// `Time.String()`: `2006-01-02 15:04:05.999999999 -0700 MST`.
    pub fn string(&self) -> String {
        self.format("2006-01-02 15:04:05.999999999 -0700 MST")
    }

    /// `Time.Format(layout)`.
    pub fn format(&self, layout: &str) -> String {
        let c = self.civil();
        let mut out = String::new();
        let mut rest = layout;
        while !rest.is_empty() {
            let Some((prefix, token, after)) = next_token(rest) else {
                out.push_str(rest);
                break;
            };
            out.push_str(prefix);
            self.write_token(&mut out, &c, token);
            rest = after;
        }
        out
    }

    fn write_token(&self, out: &mut String, c: &Civil, token: Token) {
        let month = MONTHS[(c.month as usize).saturating_sub(1) % 12];
        let day = DAYS[c.weekday as usize % 7];
        match token {
            Token::LongMonth => out.push_str(month),
            Token::Month => out.push_str(&month[..3]),
            Token::NumMonth => out.push_str(&c.month.to_string()),
            Token::ZeroMonth => out.push_str(&format!("{:02}", c.month)),
            Token::LongWeekDay => out.push_str(day),
            Token::WeekDay => out.push_str(&day[..3]),
            Token::Day => out.push_str(&c.day.to_string()),
            Token::UnderDay => out.push_str(&format!("{:>2}", c.day)),
            Token::ZeroDay => out.push_str(&format!("{:02}", c.day)),
            Token::UnderYearDay => out.push_str(&format!("{:>3}", c.yday)),
            Token::ZeroYearDay => out.push_str(&format!("{:03}", c.yday)),
            Token::Hour => out.push_str(&format!("{:02}", c.hour)),
            Token::Hour12 => out.push_str(&hour12(c.hour).to_string()),
            Token::ZeroHour12 => out.push_str(&format!("{:02}", hour12(c.hour))),
            Token::Minute => out.push_str(&c.minute.to_string()),
            Token::ZeroMinute => out.push_str(&format!("{:02}", c.minute)),
            Token::Second => out.push_str(&c.second.to_string()),
            Token::ZeroSecond => out.push_str(&format!("{:02}", c.second)),
            Token::LongYear => {
                if c.year < 0 {
                    out.push_str(&format!("-{:04}", -c.year));
                } else {
                    out.push_str(&format!("{:04}", c.year));
                }
            }
            Token::Year => out.push_str(&format!("{:02}", c.year.rem_euclid(100))),
            Token::PM => out.push_str(if c.hour >= 12 { "PM" } else { "AM" }),
            Token::Pm => out.push_str(if c.hour >= 12 { "pm" } else { "am" }),
            Token::TZ => {
                if c.abbrev.is_empty() {
                    write_offset(out, c.offset, false, false, false);
                } else {
                    out.push_str(&c.abbrev);
                }
            }
            Token::Offset {
                z,
                colon,
                seconds,
                short,
            } => {
                if z && c.offset == 0 {
                    out.push('Z');
                } else if short {
                    let sign = if c.offset < 0 { '-' } else { '+' };
                    out.push_str(&format!("{sign}{:02}", c.offset.unsigned_abs() / 3600));
                } else {
                    write_offset(out, c.offset, colon, seconds, true);
                }
            }
            Token::Frac { digits, trim, sep } => {
                let frac = format!("{:09}", self.nanos);
                let mut f = &frac[..digits.min(9)];
                if trim {
                    f = f.trim_end_matches('0');
                    if f.is_empty() {
                        return;
                    }
                }
                out.push(sep);
                out.push_str(f);
            }
        }
    }
}

fn hour12(h: u32) -> u32 {
    match h % 12 {
        0 => 12,
        x => x,
    }
}

fn write_offset(out: &mut String, offset: i32, colon: bool, seconds: bool, _full: bool) {
    let sign = if offset < 0 { '-' } else { '+' };
    let a = offset.unsigned_abs();
    let sep = if colon { ":" } else { "" };
    out.push_str(&format!("{sign}{:02}{sep}{:02}", a / 3600, a / 60 % 60));
    if seconds {
        out.push_str(&format!("{sep}{:02}", a % 60));
    }
}

/// A layout element.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Token {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    PM,
    Pm,
    TZ,
    Offset {
        z: bool,
        colon: bool,
        seconds: bool,
        short: bool,
    },
    Frac {
        digits: usize,
        trim: bool,
        sep: char,
    },
}

/// Finds the first layout element: (literal before it, the element, the rest).
pub fn next_token(layout: &str) -> Option<(&str, Token, &str)> {
    let b = layout.as_bytes();
    for i in 0..b.len() {
        let rest = &layout[i..];
        let hit = |len: usize, t: Token| Some((&layout[..i], t, &layout[i + len..]));
        let offsets = |z: bool| -> Option<(usize, Token)> {
            let r = &rest[1..];
            let off = |colon, seconds, short| Token::Offset {
                z,
                colon,
                seconds,
                short,
            };
            if r.starts_with("070000") {
                Some((7, off(false, true, false)))
            } else if r.starts_with("07:00:00") {
                Some((9, off(true, true, false)))
            } else if r.starts_with("0700") {
                Some((5, off(false, false, false)))
            } else if r.starts_with("07:00") {
                Some((6, off(true, false, false)))
            } else if r.starts_with("07") {
                Some((3, off(false, false, true)))
            } else {
                None
            }
        };
        match b[i] {
            b'J' if rest.starts_with("January") => return hit(7, Token::LongMonth),
            b'J' if rest.starts_with("Jan") => return hit(3, Token::Month),
            b'M' if rest.starts_with("Monday") => return hit(6, Token::LongWeekDay),
            b'M' if rest.starts_with("Mon") => return hit(3, Token::WeekDay),
            b'M' if rest.starts_with("MST") => return hit(3, Token::TZ),
            b'0' if rest.starts_with("002") => return hit(3, Token::ZeroYearDay),
            b'0' if b.get(i + 1).is_some_and(|c| (b'1'..=b'6').contains(c)) => {
                let t = [
                    Token::ZeroMonth,
                    Token::ZeroDay,
                    Token::ZeroHour12,
                    Token::ZeroMinute,
                    Token::ZeroSecond,
                    Token::Year,
                ][(b[i + 1] - b'1') as usize];
                return hit(2, t);
            }
            b'1' if rest.starts_with("15") => return hit(2, Token::Hour),
            b'1' => return hit(1, Token::NumMonth),
            b'2' if rest.starts_with("2006") => return hit(4, Token::LongYear),
            b'2' => return hit(1, Token::Day),
            b'_' if rest.starts_with("_2") => {
                if rest.starts_with("_2006") {
                    return Some((&layout[..i + 1], Token::LongYear, &layout[i + 5..]));
                }
                return hit(2, Token::UnderDay);
            }
            b'_' if rest.starts_with("__2") => return hit(3, Token::UnderYearDay),
            b'3' => return hit(1, Token::Hour12),
            b'4' => return hit(1, Token::Minute),
            b'5' => return hit(1, Token::Second),
            b'P' if rest.starts_with("PM") => return hit(2, Token::PM),
            b'p' if rest.starts_with("pm") => return hit(2, Token::Pm),
            b'-' | b'Z' => {
                if let Some((len, t)) = offsets(b[i] == b'Z') {
                    return hit(len, t);
                }
            }
            b'.' | b',' => {
                if let Some(&d) = b.get(i + 1)
                    && (d == b'0' || d == b'9')
                {
                    let run = b[i + 1..].iter().take_while(|&&c| c == d).count();
                    if !b.get(i + 1 + run).is_some_and(u8::is_ascii_digit) {
                        let t = Token::Frac {
                            digits: run,
                            trim: d == b'9',
                            sep: b[i] as char,
                        };
                        return hit(1 + run, t);
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// The layout text of a token (for error messages).
fn token_text(layout_rest: &str, after: &str) -> String {
    layout_rest[..layout_rest.len() - after.len()].to_string()
}

/// Up to `max` leading digits (at least `min`): the number and the rest.
fn digits(s: &str, min: usize, max: usize) -> Option<(i64, &str)> {
    let n = s.bytes().take(max).take_while(u8::is_ascii_digit).count();
    if n < min {
        return None;
    }
    Some((s[..n].parse().ok()?, &s[n..]))
}

/// `time.ParseInLocation(layout, value, zone)` for the common layout elements.
pub fn parse(layout: &str, value: &str, zone: &Zone) -> Result<GoTime, String> {
    let q = crate::fmt::quote;
    let fail = |v: &str, l: &str| {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            q(value),
            q(layout),
            q(v),
            q(l)
        )
    };
    let range = |what: &str| format!("parsing time {}: {what} out of range", q(value));
    let (mut year, mut month, mut day, mut hour, mut minute, mut second, mut nanos) =
        (0i64, 1u32, 1u32, 0u32, 0u32, 0u32, 0u32);
    let mut pm: Option<bool> = None;
    let mut offset: Option<i32> = None;
    // `Z` and `UTC` put the time in UTC itself, whatever the location asked for.
    let mut utc = false;
    let mut yday: Option<u32> = None;
    // An unknown zone abbreviation: Go fabricates a zone of that name at offset 0.
    let mut abbrev: Option<String> = None;
    let (mut l, mut v) = (layout, value);
    loop {
        let Some((prefix, token, after)) = next_token(l) else {
            if v != l {
                if let Some(extra) = v.strip_prefix(l) {
                    return Err(format!("parsing time {}: extra text: {}", q(value), q(extra)));
                }
                return Err(fail(v, l));
            }
            break;
        };
        v = skip_literal(v, prefix).ok_or_else(|| fail(v, prefix))?;
        let elem = token_text(&l[prefix.len()..], after);
        let on_fail = |s: &str| fail(s, &elem);
        let num = |s, min, max| take_num(s, min, max, &on_fail);
        match token {
            Token::LongYear => {
                let (y, r) = num(v, 4, 4)?;
                year = y;
                v = r;
            }
            Token::Year => {
                let (y, r) = num(v, 2, 2)?;
                year = if y >= 69 { y + 1900 } else { y + 2000 };
                v = r;
            }
            Token::LongMonth | Token::Month => {
                let found = MONTHS.iter().enumerate().find_map(|(k, m)| {
                    let name = if token == Token::Month { &m[..3] } else { m };
                    let head = v.get(..name.len())?;
                    head.eq_ignore_ascii_case(name)
                        .then_some((k as u32 + 1, name.len()))
                });
                let (m, len) = found.ok_or_else(|| fail(v, &elem))?;
                month = m;
                v = &v[len..];
            }
            Token::LongWeekDay | Token::WeekDay => {
                let found = DAYS.iter().find_map(|d| {
                    let name = if token == Token::WeekDay { &d[..3] } else { d };
                    let head = v.get(..name.len())?;
                    head.eq_ignore_ascii_case(name).then_some(name.len())
                });
                v = &v[found.ok_or_else(|| fail(v, &elem))?..];
            }
            Token::NumMonth | Token::ZeroMonth => {
                let (m, r) = num(v, if token == Token::ZeroMonth { 2 } else { 1 }, 2)?;
                if !(1..=12).contains(&m) {
                    return Err(range("month"));
                }
                month = m as u32;
                v = r;
            }
            Token::Day | Token::ZeroDay | Token::UnderDay => {
                let s = if token == Token::UnderDay {
                    v.strip_prefix(' ').unwrap_or(v)
                } else {
                    v
                };
                let (d, r) = num(s, if token == Token::ZeroDay { 2 } else { 1 }, 2)?;
                day = d as u32;
                v = r;
            }
            Token::ZeroYearDay | Token::UnderYearDay => {
                let s = v.trim_start_matches(' ');
                let (d, r) = num(s, 1, 3)?;
                yday = Some(d as u32);
                v = r;
            }
            Token::Hour | Token::Hour12 | Token::ZeroHour12 => {
                let (h, r) = num(v, if token == Token::ZeroHour12 { 2 } else { 1 }, 2)?;
                let limit = if token == Token::Hour { 23 } else { 12 };
                if h > limit {
                    return Err(range("hour"));
                }
                hour = h as u32;
                v = r;
            }
            Token::Minute | Token::ZeroMinute => {
                let (m, r) = num(v, if token == Token::ZeroMinute { 2 } else { 1 }, 2)?;
                if m > 59 {
                    return Err(range("minute"));
                }
                minute = m as u32;
                v = r;
            }
            Token::Second | Token::ZeroSecond => {
                let (s, r) = num(v, if token == Token::ZeroSecond { 2 } else { 1 }, 2)?;
                if s > 59 {
                    return Err(range("second"));
                }
                second = s as u32;
                v = r;
                // A fraction may follow seconds even when the layout has none.
                if !matches!(next_token(after), Some(("", Token::Frac { .. }, _)))
                    && let Some(frac) = v.strip_prefix('.').or_else(|| v.strip_prefix(','))
                    && frac.starts_with(|c: char| c.is_ascii_digit())
                {
                    let n = frac.bytes().take_while(u8::is_ascii_digit).count();
                    nanos = frac_nanos(&frac[..n]);
                    v = &frac[n..];
                }
            }
            Token::Frac {
                digits: count,
                trim,
                sep: _,
            } => {
                let frac = v.strip_prefix('.').or_else(|| v.strip_prefix(','));
                // A trimmed fraction (`.999`) is omitted unless a digit follows the point.
                let omitted = !frac.is_some_and(|f| f.starts_with(|c: char| c.is_ascii_digit()));
                if trim && omitted {
                    l = after;
                    continue;
                }
                let Some(frac) = frac else {
                    return Err(fail(v, &elem));
                };
                let n = frac.bytes().take_while(u8::is_ascii_digit).count();
                if !trim && n != count {
                    return Err(fail(v, &elem));
                }
                nanos = frac_nanos(&frac[..n]);
                v = &frac[n..];
            }
            Token::PM | Token::Pm => {
                let head = v.get(..2).ok_or_else(|| fail(v, &elem))?;
                pm = Some(match head {
                    "PM" | "pm" => true,
                    "AM" | "am" => false,
                    _ => return Err(fail(v, &elem)),
                });
                v = &v[2..];
            }
            Token::TZ => {
                let n = v.bytes().take_while(u8::is_ascii_uppercase).count();
                if n < 3 {
                    return Err(fail(v, &elem));
                }
                if &v[..n] == "UTC" {
                    offset = Some(0);
                    utc = true;
                } else {
                    abbrev = Some(v[..n].to_string());
                }
                v = &v[n..];
            }
            Token::Offset {
                z,
                colon,
                seconds,
                short,
            } => {
                if z && let Some(r) = v.strip_prefix('Z') {
                    offset = Some(0);
                    utc = true;
                    v = r;
                } else {
                    let sign = match v.as_bytes().first() {
                        Some(b'+') => 1,
                        Some(b'-') => -1,
                        _ => return Err(fail(v, &elem)),
                    };
                    let (h, mut r) = num(&v[1..], 2, 2)?;
                    let mut secs = h * 3600;
                    if !short {
                        if colon {
                            r = r.strip_prefix(':').ok_or_else(|| fail(v, &elem))?;
                        }
                        let (m, r2) = num(r, 2, 2)?;
                        secs += m * 60;
                        r = r2;
                        if seconds {
                            if colon {
                                r = r.strip_prefix(':').ok_or_else(|| fail(v, &elem))?;
                            }
                            let (s, r3) = num(r, 2, 2)?;
                            secs += s;
                            r = r3;
                        }
                    }
                    offset = Some((sign * secs) as i32);
                    v = r;
                }
            }
        }
        l = after;
    }
    if let Some(pm) = pm {
        if pm && hour < 12 {
            hour += 12;
        } else if !pm && hour == 12 {
            hour = 0;
        }
    }
    if let Some(yd) = yday {
        let days = days_from_civil(year, 1, 1) + i64::from(yd) - 1;
        let (_, m, d) = civil_from_days(days);
        month = m;
        day = d;
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(range("day"));
    }
    let local = days_from_civil(year, month, day) * 86_400
        + i64::from(hour) * 3600
        + i64::from(minute) * 60
        + i64::from(second);
    let (unix, zone) = match offset {
        Some(_) if utc => (local, Zone::utc()),
        Some(off) => {
            let unix = local - i64::from(off);
            let (zoff, _) = zone.lookup(unix);
            if zoff == off {
                (unix, zone.clone())
            } else {
                (unix, Zone::fixed("", off, ""))
            }
        }
        None => match abbrev {
            Some(name) => (local, Zone::fixed(&name, 0, &name)),
            None => {
                let (off, _) = zone.lookup(local);
                (local - i64::from(off), zone.clone())
            }
        },
    };
    Ok(GoTime { unix, nanos, zone })
}

/// Matches the literal text between layout elements; a run of spaces in the layout matches
/// any run of spaces (including none) in the value.
fn skip_literal<'a>(mut value: &'a str, mut prefix: &str) -> Option<&'a str> {
    while let Some(c) = prefix.chars().next() {
        if c.is_ascii_whitespace() {
            if value.starts_with(|v: char| !v.is_ascii_whitespace()) {
                return None;
            }
            prefix = prefix.trim_start_matches(|x: char| x.is_ascii_whitespace());
            value = value.trim_start_matches(|x: char| x.is_ascii_whitespace());
            continue;
        }
        value = value.strip_prefix(c)?;
        prefix = &prefix[c.len_utf8()..];
    }
    Some(value)
}

fn take_num<'a>(
    s: &'a str,
    min: usize,
    max: usize,
    fail: &dyn Fn(&str) -> String,
) -> Result<(i64, &'a str), String> {
    digits(s, min, max).ok_or_else(|| fail(s))
}

fn frac_nanos(digits: &str) -> u32 {
    let d: String = digits.chars().chain(std::iter::repeat('0')).take(9).collect();
    d.parse().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(unix: i64, nanos: u32) -> GoTime {
        GoTime {
            unix,
            nanos,
            zone: Zone::utc(),
        }
    }

    #[test]
    fn formats_like_go() {
        let x = t(1_700_000_000, 123_456_000);
        assert_eq!(x.format("2006-01-02T15:04:05Z07:00"), "2023-11-14T22:13:20Z");
        assert_eq!(x.string(), "2023-11-14 22:13:20.123456 +0000 UTC");
        assert_eq!(
            x.format("Mon Jan _2 3:04PM .000 002"),
            "Tue Nov 14 10:13PM .123 318"
        );
        assert_eq!(t(0, 0).format("2006-01-02"), "1970-01-01");
        assert_eq!(t(-1, 0).format("2006-01-02 15:04:05"), "1969-12-31 23:59:59");
    }
}
