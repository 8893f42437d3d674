//! Exact decimal arithmetic with the semantics sprig's `addf`/`subf`/`mulf`/`divf` get from
//! shopspring/decimal: operands enter as the shortest decimal that round-trips their float64,
//! sums and products are exact, quotients are rounded half away from zero to 16 places, and
//! the result is the float64 nearest to the exact decimal.

use num_bigint::{BigInt, Sign};

/// `mantissa × 10^exponent`.
#[derive(Clone, Debug, PartialEq)]
pub struct Decimal {
    mantissa: BigInt,
    exponent: i64,
}

/// Digits after the point a quotient keeps (shopspring's `DivisionPrecision`).
const DIVISION_PRECISION: i64 = 16;

/// Why an operation has no decimal result; the texts are shopspring's panic messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecimalError {
    NotFinite(String),
    DivisionByZero,
}

impl std::fmt::Display for DecimalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecimalError::NotFinite(v) => write!(f, "Cannot create a Decimal from {v}"),
            DecimalError::DivisionByZero => f.write_str("decimal division by 0"),
        }
    }
}

impl Decimal {
    /// The shortest decimal that reads back as `f`; NaN and infinities have none.
    pub fn from_f64(f: f64) -> Result<Decimal, DecimalError> {
        if f.is_nan() {
            return Err(DecimalError::NotFinite("NaN".into()));
        }
        if f.is_infinite() {
            let sign = if f > 0.0 { "+" } else { "-" };
            return Err(DecimalError::NotFinite(format!("{sign}Inf")));
        }
        // Rust's `{:e}` prints the shortest round-trip digits: `-1.2345e-7`.
        let text = format!("{f:e}");
        let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
        let exp: i64 = exp.parse().unwrap_or(0);
        let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let digits = format!("{int_part}{frac_part}");
        let mantissa: BigInt = digits.parse().unwrap_or_default();
        Ok(Decimal {
            mantissa,
            exponent: exp - frac_part.len() as i64,
        })
    }

    /// The float64 nearest to the exact value (±Inf when it is too large).
    pub fn to_f64(&self) -> f64 {
        if self.mantissa.sign() == Sign::NoSign {
            return 0.0;
        }
        // Rust's float parsing is correctly rounded for any number of digits.
        format!("{}e{}", self.mantissa, self.exponent)
            .parse()
            .unwrap_or(0.0)
    }

    /// Both operands' mantissas scaled to their common (smaller) exponent.
    fn aligned(&self, other: &Decimal) -> (BigInt, BigInt, i64) {
        let exp = self.exponent.min(other.exponent);
        (
            scale(&self.mantissa, self.exponent - exp),
            scale(&other.mantissa, other.exponent - exp),
            exp,
        )
    }

    pub fn add(&self, other: &Decimal) -> Decimal {
        let (a, b, exponent) = self.aligned(other);
        Decimal {
            mantissa: a + b,
            exponent,
        }
    }

    pub fn sub(&self, other: &Decimal) -> Decimal {
        let (a, b, exponent) = self.aligned(other);
        Decimal {
            mantissa: a - b,
            exponent,
        }
    }

    pub fn mul(&self, other: &Decimal) -> Decimal {
        Decimal {
            mantissa: &self.mantissa * &other.mantissa,
            exponent: self.exponent + other.exponent,
        }
    }

    /// The quotient rounded half away from zero to [`DIVISION_PRECISION`] places.
    pub fn div(&self, other: &Decimal) -> Result<Decimal, DecimalError> {
        if other.mantissa.sign() == Sign::NoSign {
            return Err(DecimalError::DivisionByZero);
        }
        // self/other × 10^P = (m1 / m2) × 10^(e1 - e2 + P)
        let shift = self.exponent - other.exponent + DIVISION_PRECISION;
        let (mut num, mut den) = (
            self.mantissa.magnitude().clone(),
            other.mantissa.magnitude().clone(),
        );
        if shift >= 0 {
            num = scale_u(&num, shift);
        } else {
            den = scale_u(&den, -shift);
        }
        let (mut q, r) = (&num / &den, &num % &den);
        if r * 2u32 >= den {
            q += 1u32;
        }
        let negative = (self.mantissa.sign() == Sign::Minus) != (other.mantissa.sign() == Sign::Minus);
        let sign = if negative { Sign::Minus } else { Sign::Plus };
        Ok(Decimal {
            mantissa: BigInt::from_biguint(sign, q),
            exponent: -DIVISION_PRECISION,
        })
    }
}

fn scale(m: &BigInt, by: i64) -> BigInt {
    m * BigInt::from(10u32).pow(u32::try_from(by).unwrap_or(0))
}

fn scale_u(m: &num_bigint::BigUint, by: i64) -> num_bigint::BigUint {
    m * num_bigint::BigUint::from(10u32).pow(u32::try_from(by).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(f: f64) -> Decimal {
        Decimal::from_f64(f).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn sums_are_exact_decimals() {
        assert_eq!(d(0.1).add(&d(0.2)).to_f64(), 0.3);
        assert_eq!(d(1.0).sub(&d(0.9)).to_f64(), 0.1);
        assert_eq!(d(1e300).add(&d(1e-300)).to_f64(), 1e300);
        assert_eq!(d(1.1).mul(&d(3.0)).to_f64(), 3.3);
        assert_eq!(d(1e300).mul(&d(1e300)).to_f64(), f64::INFINITY);
    }

    #[test]
    fn quotients_round_to_sixteen_places() {
        let q = |a: f64, b: f64| d(a).div(&d(b)).map(|x| x.to_f64());
        assert_eq!(q(1.0, 3.0), Ok(0.3333333333333333));
        assert_eq!(q(2.0, 3.0), Ok(0.6666666666666667));
        assert_eq!(q(-2.0, 3.0), Ok(-0.6666666666666667));
        assert_eq!(q(1.0, 7.0), Ok(0.1428571428571429));
        assert_eq!(q(1.0, 0.0), Err(DecimalError::DivisionByZero));
        assert_eq!(q(1e300, 1e-300), Ok(f64::INFINITY));
    }

    #[test]
    fn non_finite_floats_have_no_decimal() {
        assert_eq!(
            Decimal::from_f64(f64::INFINITY).map_err(|e| e.to_string()),
            Err("Cannot create a Decimal from +Inf".to_string())
        );
        assert_eq!(
            Decimal::from_f64(f64::NAN).map_err(|e| e.to_string()),
            Err("Cannot create a Decimal from NaN".to_string())
        );
    }
}
