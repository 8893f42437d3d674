//! Sprig v3.3.0 functions: math. Integer functions convert every operand with
//! `cast.ToInt64` and return Go `int64` (wrapping on overflow like Go); float functions use
//! `cast.ToFloat64`; `addf`…`divf` compute in exact decimals (see [`decimal`]).

mod decimal;

use std::rc::Rc;

use crate::error::FuncError;
use crate::funcs::conversion::{to_float64, to_int64};
use crate::funcs::{Func, FuncEnv, FuncMap, arg_int};
use capstan_go::value::{GoType, List, ListKind, Value};

use decimal::Decimal;

/// The most elements `until`/`untilStep`/`seq` produce. Go would try to allocate any count
/// (and run out of memory); a render must stay bounded, so larger ranges are an error.
pub const MAX_RANGE_LEN: usize = 1_000_000;

const DIVIDE_BY_ZERO: &str = "runtime error: integer divide by zero";

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    let _ = env;
    use GoType::{Any, Float64, Int};
    map.insert(
        "add",
        Func::pure_variadic(&[], Any, |a| {
            Ok(Value::Int64(
                a.iter().fold(0i64, |acc, v| acc.wrapping_add(to_int64(v))),
            ))
        }),
    );
    map.insert(
        "add1",
        Func::pure(&[Any], |a| Ok(Value::Int64(to_int64(&a[0]).wrapping_add(1)))),
    );
    map.insert(
        "sub",
        Func::pure(&[Any, Any], |a| {
            Ok(Value::Int64(to_int64(&a[0]).wrapping_sub(to_int64(&a[1]))))
        }),
    );
    map.insert(
        "mul",
        Func::pure_variadic(&[Any], Any, |a| {
            Ok(Value::Int64(
                a.iter()
                    .skip(1)
                    .fold(to_int64(&a[0]), |acc, v| acc.wrapping_mul(to_int64(v))),
            ))
        }),
    );
    map.insert(
        "div",
        Func::pure(&[Any, Any], |a| int_division(&a[0], &a[1], i64::wrapping_div)),
    );
    map.insert(
        "mod",
        Func::pure(&[Any, Any], |a| int_division(&a[0], &a[1], i64::wrapping_rem)),
    );
    for name in ["max", "biggest"] {
        map.insert(
            name,
            Func::pure_variadic(&[Any], Any, |a| {
                Ok(Value::Int64(a.iter().map(to_int64).max().unwrap_or(0)))
            }),
        );
    }
    map.insert(
        "min",
        Func::pure_variadic(&[Any], Any, |a| {
            Ok(Value::Int64(a.iter().map(to_int64).min().unwrap_or(0)))
        }),
    );
    map.insert(
        "maxf",
        Func::pure_variadic(&[Any], Any, |a| {
            Ok(Value::Float(
                a.iter()
                    .skip(1)
                    .fold(to_float64(&a[0]), |acc, v| go_max(acc, to_float64(v))),
            ))
        }),
    );
    map.insert(
        "minf",
        Func::pure_variadic(&[Any], Any, |a| {
            Ok(Value::Float(
                a.iter()
                    .skip(1)
                    .fold(to_float64(&a[0]), |acc, v| go_min(acc, to_float64(v))),
            ))
        }),
    );
    map.insert(
        "floor",
        Func::pure(&[Any], |a| Ok(Value::Float(to_float64(&a[0]).floor()))),
    );
    map.insert(
        "ceil",
        Func::pure(&[Any], |a| Ok(Value::Float(to_float64(&a[0]).ceil()))),
    );
    map.insert(
        "round",
        Func::pure_variadic(&[Any, Int], Float64, |a| {
            let round_on = match a.get(2) {
                Some(Value::Float(f)) => *f,
                _ => 0.5,
            };
            Ok(Value::Float(round(to_float64(&a[0]), arg_int(&a[1]), round_on)))
        }),
    );
    map.insert(
        "addf",
        Func::pure_variadic(&[], Any, |a| {
            decimal_fold(&Value::Float(0.0), a, |x, y| Ok(x.add(y)))
        }),
    );
    map.insert(
        "add1f",
        Func::pure(&[Any], |a| {
            decimal_fold(&a[0], &[Value::Int(1)], |x, y| Ok(x.add(y)))
        }),
    );
    map.insert(
        "subf",
        Func::pure_variadic(&[Any], Any, |a| decimal_fold(&a[0], &a[1..], |x, y| Ok(x.sub(y)))),
    );
    map.insert(
        "mulf",
        Func::pure_variadic(&[Any], Any, |a| decimal_fold(&a[0], &a[1..], |x, y| Ok(x.mul(y)))),
    );
    map.insert(
        "divf",
        Func::pure_variadic(&[Any], Any, |a| decimal_fold(&a[0], &a[1..], Decimal::div)),
    );
    map.insert(
        "until",
        Func::pure(&[Int], |a| {
            let count = arg_int(&a[0]);
            let step = if count < 0 { -1 } else { 1 };
            until_step(0, count, step).map(int_list)
        }),
    );
    map.insert(
        "untilStep",
        Func::pure(&[Int, Int, Int], |a| {
            until_step(arg_int(&a[0]), arg_int(&a[1]), arg_int(&a[2])).map(int_list)
        }),
    );
    map.insert(
        "seq",
        Func::pure_variadic(&[], Int, |a| {
            let params: Vec<i64> = a.iter().map(arg_int).collect();
            seq(&params).map(Value::from)
        }),
    );
}

/// `div`/`mod`: Go's integer division panics on a zero divisor (Helm reports the runtime
/// error) and wraps `MinInt64 / -1`.
fn int_division(a: &Value, b: &Value, op: fn(i64, i64) -> i64) -> Result<Value, FuncError> {
    let divisor = to_int64(b);
    if divisor == 0 {
        return Err(FuncError::msg(DIVIDE_BY_ZERO));
    }
    Ok(Value::Int64(op(to_int64(a), divisor)))
}

/// Go's `math.Max`: NaN wins, and +0 beats -0.
fn go_max(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x == 0.0 && y == 0.0 {
        if x.is_sign_negative() { y } else { x }
    } else if x > y {
        x
    } else {
        y
    }
}

/// Go's `math.Min`: NaN wins, and -0 beats +0.
fn go_min(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x == 0.0 && y == 0.0 {
        if x.is_sign_negative() { x } else { y }
    } else if x < y {
        x
    } else {
        y
    }
}

/// `10^places` as Go's `math.Pow(10, places)` computes it (exact for the usual range).
fn pow10(places: i64) -> f64 {
    match places {
        0..=22 => 10f64.powi(places as i32),
        -22..=-1 => 1.0 / 10f64.powi(-places as i32),
        _ => 10f64.powf(places as f64),
    }
}

/// sprig's `round`: scales by `10^places`, rounds up when the fractional part reaches
/// `round_on` (a signed comparison, so negative halves round down), and scales back.
fn round(value: f64, places: i64, round_on: f64) -> f64 {
    let pow = pow10(places);
    let digit = pow * value;
    let rounded = if digit.fract() >= round_on {
        digit.ceil()
    } else {
        digit.floor()
    };
    rounded / pow
}

/// shopspring-style decimal arithmetic folded over the operands, returned as float64.
fn decimal_fold(
    first: &Value,
    rest: &[Value],
    op: impl Fn(&Decimal, &Decimal) -> Result<Decimal, decimal::DecimalError>,
) -> Result<Value, FuncError> {
    let to_dec = |v: &Value| Decimal::from_f64(to_float64(v)).map_err(|e| FuncError::msg(e.to_string()));
    let mut acc = to_dec(first)?;
    for v in rest {
        acc = op(&acc, &to_dec(v)?).map_err(|e| FuncError::msg(e.to_string()))?;
    }
    Ok(Value::Float(acc.to_f64()))
}

fn too_long() -> FuncError {
    FuncError::msg(format!("range too long: more than {MAX_RANGE_LEN} elements"))
}

/// sprig's `untilStep`: `start, start+step, …` up to (excluding) `stop`, counting down when
/// `stop < start` and the step is negative; an empty list when the step points away.
fn until_step(start: i64, stop: i64, step: i64) -> Result<Vec<i64>, FuncError> {
    let descending = stop < start;
    if (descending && step >= 0) || (!descending && step <= 0) {
        return Ok(Vec::new());
    }
    let span = (i128::from(stop) - i128::from(start)).unsigned_abs();
    let count = span.div_ceil(i128::from(step).unsigned_abs());
    if count > MAX_RANGE_LEN as u128 {
        return Err(too_long());
    }
    let mut out = Vec::with_capacity(count as usize);
    let mut i = start;
    while (descending && i > stop) || (!descending && i < stop) {
        out.push(i);
        // Go would wrap around and keep going; stopping is the only bounded answer.
        match i.checked_add(step) {
            Some(next) => i = next,
            None => break,
        }
    }
    Ok(out)
}

/// A Go `[]int`.
fn int_list(items: Vec<i64>) -> Value {
    Value::List(List::new(
        ListKind::Int,
        items.into_iter().map(Value::Int).collect(),
    ))
}

/// sprig's `seq`: `seq end`, `seq start end` or `seq start step end`, inclusive, counting
/// down when `end < start`; the numbers joined with spaces. Other arities give "".
fn seq(params: &[i64]) -> Result<String, FuncError> {
    let (start, end, step) = match *params {
        [end] => (1, end, None),
        [start, end] => (start, end, None),
        [start, step, end] => (start, end, Some(step)),
        _ => return Ok(String::new()),
    };
    let increment: i64 = if end < start { -1 } else { 1 };
    let step = match step {
        None => increment,
        Some(step) if (end < start && step > 0) || (end >= start && step < 0) => return Ok(String::new()),
        Some(step) => step,
    };
    let numbers = until_step(start, end.wrapping_add(increment), step)?;
    Ok(numbers.iter().map(i64::to_string).collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_matches_sprig() {
        assert_eq!(round(5.24159, 2, 0.5), 5.24);
        assert_eq!(round(2.5, 0, 0.5), 3.0);
        assert_eq!(round(-2.5, 0, 0.5), -3.0);
        assert_eq!(round(1.45, 1, 0.5), 1.5);
        assert_eq!(round(1.5, 0, 0.6), 1.0);
        assert_eq!(round(123.456, -1, 0.5), 120.0);
        assert_eq!(round(1.005, 2, 0.5), 1.0);
    }

    #[test]
    fn sequences_match_sprig() {
        let s = |p: &[i64]| seq(p).unwrap_or_default();
        assert_eq!(s(&[5]), "1 2 3 4 5");
        assert_eq!(s(&[0]), "1 0");
        assert_eq!(s(&[-3]), "1 0 -1 -2 -3");
        assert_eq!(s(&[5, 2]), "5 4 3 2");
        assert_eq!(s(&[1, 2, 10]), "1 3 5 7 9");
        assert_eq!(s(&[10, -3, 1]), "10 7 4 1");
        assert_eq!(s(&[1, -1, 10]), "");
        assert_eq!(s(&[1, 0, 5]), "");
        assert_eq!(s(&[]), "");
    }

    #[test]
    fn ranges_are_bounded() {
        assert_eq!(until_step(0, 10, 3).ok(), Some(vec![0, 3, 6, 9]));
        assert_eq!(until_step(10, 0, -3).ok(), Some(vec![10, 7, 4, 1]));
        assert_eq!(until_step(0, 10, 0).ok(), Some(vec![]));
        assert!(until_step(0, i64::MAX, 1).is_err());
        assert_eq!(
            until_step(i64::MAX - 1, i64::MAX, 5).ok(),
            Some(vec![i64::MAX - 1])
        );
    }

    #[test]
    fn go_min_max_nan_and_zero() {
        assert!(go_max(1.0, f64::NAN).is_nan());
        assert!(go_min(f64::NAN, 1.0).is_nan());
        assert!(go_max(-0.0, 0.0).is_sign_positive());
        assert!(go_min(0.0, -0.0).is_sign_negative());
    }
}
