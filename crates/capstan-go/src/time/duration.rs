//! Go's `time.Duration`: nanoseconds in an i64, `String()` and `ParseDuration`.

pub const MICROSECOND: i64 = 1_000;
pub const MILLISECOND: i64 = 1_000_000;
pub const SECOND: i64 = 1_000_000_000;
pub const MINUTE: i64 = 60 * SECOND;
pub const HOUR: i64 = 60 * MINUTE;

/// `Duration.String()`: `1h2m3.5s`, `1.5ms`, `0s`.
pub fn format(d: i64) -> String {
    if d == 0 {
        return "0s".into();
    }
    let neg = d < 0;
    let u = d.unsigned_abs();
    let mut out = String::new();
    if u < SECOND as u64 {
        let (unit, scale) = if u < MICROSECOND as u64 {
            ("ns", 1u64)
        } else if u < MILLISECOND as u64 {
            ("µs", MICROSECOND as u64)
        } else {
            ("ms", MILLISECOND as u64)
        };
        out.push_str(&fraction(u, scale));
        out.push_str(unit);
    } else {
        let hours = u / HOUR as u64;
        let minutes = (u / MINUTE as u64) % 60;
        let secs = u % MINUTE as u64;
        if hours > 0 {
            out.push_str(&format!("{hours}h"));
        }
        if hours > 0 || minutes > 0 {
            out.push_str(&format!("{minutes}m"));
        }
        out.push_str(&fraction(secs, SECOND as u64));
        out.push('s');
    }
    if neg { format!("-{out}") } else { out }
}

/// `v / scale` with the remainder as a decimal fraction without trailing zeros.
fn fraction(v: u64, scale: u64) -> String {
    let whole = v / scale;
    let rem = v % scale;
    if rem == 0 {
        return whole.to_string();
    }
    let width = scale.ilog10() as usize;
    let frac = format!("{rem:0width$}");
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

/// Go's quoting in time error messages.
fn quote(s: &str) -> String {
    crate::fmt::quote(s)
}

/// `time.ParseDuration`.
pub fn parse(s: &str) -> Result<i64, String> {
    let orig = s;
    let invalid = || format!("time: invalid duration {}", quote(orig));
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = &rest[..int_len];
        rest = &rest[int_len..];
        let mut frac_part = "";
        if let Some(after) = rest.strip_prefix('.') {
            let flen = after.bytes().take_while(u8::is_ascii_digit).count();
            frac_part = &after[..flen];
            rest = &after[flen..];
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(invalid());
        }
        let unit_len = rest
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {}", quote(orig)));
        }
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => MICROSECOND as u128,
            "ms" => MILLISECOND as u128,
            "s" => SECOND as u128,
            "m" => MINUTE as u128,
            "h" => HOUR as u128,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    quote(unit),
                    quote(orig)
                ));
            }
        };
        let whole: u128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| invalid())?
        };
        let mut value = whole.checked_mul(scale).ok_or_else(invalid)?;
        if !frac_part.is_empty() {
            // Go keeps the fraction's precision as far as it fits and truncates.
            let digits: String = frac_part.chars().take(30).collect();
            let num: u128 = digits.parse().unwrap_or(0);
            let den = 10u128.pow(digits.len() as u32);
            value += num * scale / den;
        }
        total = total.checked_add(value).ok_or_else(invalid)?;
        if total > 1u128 << 63 {
            return Err(invalid());
        }
    }
    if !neg && total > i64::MAX as u128 {
        return Err(invalid());
    }
    let signed = total as i128;
    Ok((if neg { -signed } else { signed }) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings() {
        assert_eq!(format(3700 * SECOND), "1h1m40s");
        assert_eq!(format(0), "0s");
        assert_eq!(format(1500 * MICROSECOND), "1.5ms");
        assert_eq!(format(-HOUR), "-1h0m0s");
        assert_eq!(format(1500 * MILLISECOND), "1.5s");
        assert_eq!(format(100), "100ns");
        assert_eq!(format(MINUTE), "1m0s");
    }

    #[test]
    fn parsing() {
        assert_eq!(parse("-1h30m"), Ok(-90 * MINUTE));
        assert_eq!(parse("1.5h"), Ok(90 * MINUTE));
        assert_eq!(parse("0"), Ok(0));
        assert_eq!(parse("1"), Err("time: missing unit in duration \"1\"".into()));
        assert_eq!(
            parse("1d"),
            Err("time: unknown unit \"d\" in duration \"1d\"".into())
        );
        assert_eq!(parse("abc"), Err("time: invalid duration \"abc\"".into()));
        assert_eq!(parse(""), Err("time: invalid duration \"\"".into()));
    }
}
