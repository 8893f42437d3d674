//! Sprig v3.3.0 functions: dates (`now`, `date`, `dateInZone`, `dateModify`, `toDate`,
//! `duration`, `durationRound`, `ago`, `unixEpoch`, `htmlDate`…) over a Go-like `time.Time`
//! object. The clock comes from [`FuncEnv`]; `Local` is UTC, as in the oracle.

use std::rc::Rc;

use crate::error::FuncError;
use crate::funcs::{Func, FuncEnv, FuncMap, arg_str};
use capstan_go::time::{self, GoTime, TIME, Zone, as_time, duration, local_zone, time_value, zero_time};
use capstan_go::value::{GoType, Value};

/// The current instant from the environment's clock (fixed in deterministic renders).
fn now(env: &FuncEnv) -> GoTime {
    let (unix, nanos) = match env.fixed_unix_seconds() {
        Some(s) => (s, 0),
        None => {
            let d = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            (i64::try_from(d.as_secs()).unwrap_or(i64::MAX), d.subsec_nanos())
        }
    };
    GoTime {
        unix,
        nanos,
        zone: local_zone(),
    }
}

/// sprig's date argument: a time, or unix seconds as int/int64; anything else means now.
fn date_arg(env: &FuncEnv, v: &Value) -> GoTime {
    match v {
        Value::Int(s) | Value::Int64(s) => GoTime {
            unix: *s,
            nanos: 0,
            zone: local_zone(),
        },
        other => as_time(other).unwrap_or_else(|| now(env)),
    }
}

fn date_in_zone(env: &FuncEnv, layout: &str, date: &Value, zone: &str) -> Value {
    let zone = Zone::load(zone).unwrap_or_else(Zone::utc);
    Value::from(date_arg(env, date).in_zone(zone).format(layout))
}

/// Nanoseconds between two instants, saturating like Go's `Sub`.
fn since(env: &FuncEnv, t: &GoTime) -> i64 {
    let n = now(env);
    let secs = i128::from(n.unix) - i128::from(t.unix);
    let ns = secs * 1_000_000_000 + i128::from(n.nanos) - i128::from(t.nanos);
    ns.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    use GoType::{Any, String};
    let time_t = GoType::Named(TIME);
    let e = Rc::clone(env);
    map.insert("now", Func::pure(&[], move |_| Ok(time_value(now(&e)))));
    let e = Rc::clone(env);
    map.insert(
        "date",
        Func::pure(&[String, Any], move |a| {
            Ok(date_in_zone(&e, arg_str(&a[0]), &a[1], "Local"))
        }),
    );
    for name in ["dateInZone", "date_in_zone"] {
        let e = Rc::clone(env);
        map.insert(
            name,
            Func::pure(&[String, Any, String], move |a| {
                Ok(date_in_zone(&e, arg_str(&a[0]), &a[1], arg_str(&a[2])))
            }),
        );
    }
    let e = Rc::clone(env);
    map.insert(
        "htmlDate",
        Func::pure(&[Any], move |a| {
            Ok(date_in_zone(&e, "2006-01-02", &a[0], "Local"))
        }),
    );
    let e = Rc::clone(env);
    map.insert(
        "htmlDateInZone",
        Func::pure(&[Any, String], move |a| {
            Ok(date_in_zone(&e, "2006-01-02", &a[0], arg_str(&a[1])))
        }),
    );
    for name in ["dateModify", "date_modify"] {
        map.insert(
            name,
            Func::pure(&[String, time_t], |a| {
                let t = as_time(&a[1]).unwrap_or_else(zero_time);
                Ok(time_value(match duration::parse(arg_str(&a[0])) {
                    Ok(d) => t.add(d),
                    Err(_) => t,
                }))
            }),
        );
    }
    for name in ["mustDateModify", "must_date_modify"] {
        map.insert(
            name,
            Func::pure(&[String, time_t], |a| {
                let t = as_time(&a[1]).unwrap_or_else(zero_time);
                let d = duration::parse(arg_str(&a[0])).map_err(FuncError::msg)?;
                Ok(time_value(t.add(d)))
            }),
        );
    }
    let e = Rc::clone(env);
    map.insert(
        "ago",
        Func::pure(&[Any], move |a| {
            let t = date_arg(&e, &a[0]);
            Ok(Value::from(duration::format(round_seconds(since(&e, &t)))))
        }),
    );
    map.insert(
        "duration",
        Func::pure(&[Any], |a| {
            let n = match &a[0] {
                Value::String(s) => parse_int_clamped(s),
                Value::Int64(n) => *n,
                _ => 0,
            };
            Ok(Value::from(duration::format(n.wrapping_mul(duration::SECOND))))
        }),
    );
    let e = Rc::clone(env);
    map.insert(
        "durationRound",
        Func::pure(&[Any], move |a| {
            let d = match &a[0] {
                Value::String(s) => duration::parse(s).unwrap_or(0),
                Value::Int64(n) => *n,
                other => as_time(other).map_or(0, |t| since(&e, &t)),
            };
            Ok(Value::from(duration_round(d)))
        }),
    );
    map.insert(
        "toDate",
        Func::pure(&[String, String], |a| {
            Ok(time_value(
                time::parse(arg_str(&a[0]), arg_str(&a[1]), &local_zone()).unwrap_or_else(|_| zero_time()),
            ))
        }),
    );
    map.insert(
        "mustToDate",
        Func::pure(&[String, String], |a| {
            time::parse(arg_str(&a[0]), arg_str(&a[1]), &local_zone())
                .map(time_value)
                .map_err(FuncError::msg)
        }),
    );
    map.insert(
        "unixEpoch",
        Func::pure(&[time_t], |a| {
            Ok(Value::from(as_time(&a[0]).map_or(0, |t| t.unix).to_string()))
        }),
    );
}

/// `strconv.ParseInt(s, 10, 64)` with the error ignored: 0, or the clamped value on overflow.
fn parse_int_clamped(s: &str) -> i64 {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return 0;
    }
    match s.parse::<i64>() {
        Ok(n) => n,
        Err(_) if neg => i64::MIN,
        Err(_) => i64::MAX,
    }
}

/// `Duration.Round(time.Second)`: half away from zero.
fn round_seconds(d: i64) -> i64 {
    let s = duration::SECOND;
    let r = d % s;
    let base = d - r;
    if r.unsigned_abs() * 2 >= s as u64 {
        if d < 0 {
            base.saturating_sub(s)
        } else {
            base.saturating_add(s)
        }
    } else {
        base
    }
}

/// sprig's `durationRound`: the largest whole unit (y, mo, d, h, m, s) of |d|.
fn duration_round(d: i64) -> String {
    let u = d.unsigned_abs();
    let hour = duration::HOUR as u64;
    let units = [
        (hour * 24 * 365, "y"),
        (hour * 24 * 30, "mo"),
        (hour * 24, "d"),
        (hour, "h"),
        (duration::MINUTE as u64, "m"),
        (duration::SECOND as u64, "s"),
    ];
    for (size, suffix) in units {
        if u > size {
            return format!("{}{suffix}", u / size);
        }
    }
    "0s".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_helpers() {
        assert_eq!(duration_round(3 * duration::HOUR + 5), "3h");
        assert_eq!(duration_round(-(400 * 24 * duration::HOUR)), "1y");
        assert_eq!(duration_round(duration::SECOND), "0s");
        assert_eq!(round_seconds(1_500_000_000), 2_000_000_000);
        assert_eq!(round_seconds(-1_499_999_999), -1_000_000_000);
        assert_eq!(parse_int_clamped("99999999999999999999"), i64::MAX);
    }
}
