//! `strconv.FormatFloat`: Go's float to text conversion for every format byte.
//!
//! Digits come from Rust's own conversions, which are exact: `{:e}` yields the shortest
//! digits that round-trip (what Go's precision -1 asks for) and `{:.Ne}` with a large N yields
//! the exact binary value, which we then round half-to-even like Go's decimal rounding.

/// A decimal number `0.d₁d₂… × 10^dp` with ASCII digits and no trailing zeros.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Decimal {
    digits: Vec<u8>,
    dp: i32,
}

/// Digits beyond the 767 significant digits of the longest exact f64 expansion are zero.
const EXACT_DIGITS: usize = 800;

/// Go's `strconv.FormatFloat(f, fmt, prec, bitSize)`.
pub fn format_float(f: f64, fmt: u8, prec: i32, bit_size: u32) -> String {
    let f32_mode = bit_size == 32;
    let f = if f32_mode { f64::from(f as f32) } else { f };
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let neg = f.is_sign_negative();
    match fmt {
        b'b' => return format_binary(f, neg, f32_mode),
        b'x' | b'X' => return format_hex(f, fmt, prec, neg, f32_mode),
        _ => {}
    }
    let abs = f.abs();
    let shortest = prec < 0;
    let mut prec = prec;
    let digs = if shortest {
        let d = shortest_digits(abs, f32_mode);
        prec = match fmt {
            b'e' | b'E' => d.digits.len() as i32 - 1,
            b'f' => (d.digits.len() as i32 - d.dp).max(0),
            _ => d.digits.len() as i32,
        };
        d
    } else {
        let exact = exact_digits(abs);
        let keep = match fmt {
            b'e' | b'E' => prec.saturating_add(1),
            b'f' => exact.dp.saturating_add(prec),
            b'g' | b'G' => {
                if prec == 0 {
                    prec = 1;
                }
                prec
            }
            _ => 1,
        };
        round(exact, keep)
    };
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    match fmt {
        b'e' | b'E' => fmt_e(&mut out, &digs, prec, fmt),
        b'f' | b'F' => fmt_f(&mut out, &digs, prec),
        b'g' | b'G' => {
            let nd = digs.digits.len() as i32;
            let mut eprec = prec;
            if eprec > nd && nd >= digs.dp {
                eprec = nd;
            }
            // Shortest %g switches to exponent form from 1e+21 only in JS; Go uses 6 here.
            if shortest {
                eprec = 6;
            }
            let exp = digs.dp - 1;
            if exp < -4 || exp >= eprec {
                let p = prec.min(nd);
                fmt_e(&mut out, &digs, p - 1, fmt + b'e' - b'g');
            } else {
                let p = if prec > digs.dp { nd } else { prec };
                fmt_f(&mut out, &digs, (p - digs.dp).max(0));
            }
        }
        _ => {
            // An unknown format byte: Go prints '%' and the byte.
            out.truncate(0);
            out.push('%');
            out.push(fmt as char);
        }
    }
    out
}

/// The shortest digits that read back as the same float.
fn shortest_digits(abs: f64, f32_mode: bool) -> Decimal {
    if abs == 0.0 {
        return Decimal {
            digits: Vec::new(),
            dp: 0,
        };
    }
    let text = if f32_mode {
        format!("{:e}", abs as f32)
    } else {
        format!("{abs:e}")
    };
    parse_sci(&text)
}

/// The exact decimal expansion of a finite float.
fn exact_digits(abs: f64) -> Decimal {
    if abs == 0.0 {
        return Decimal {
            digits: Vec::new(),
            dp: 0,
        };
    }
    parse_sci(&format!("{abs:.EXACT_DIGITS$e}"))
}

/// Parses Rust's `d.ddde±x` into a trimmed [`Decimal`].
fn parse_sci(text: &str) -> Decimal {
    let (mantissa, exp) = text.split_once('e').unwrap_or((text, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    while digits.last() == Some(&b'0') {
        digits.pop();
    }
    let lead = digits.iter().take_while(|&&d| d == b'0').count();
    digits.drain(..lead);
    Decimal {
        dp: exp + 1 - lead as i32,
        digits,
    }
}

/// Rounds to `nd` significant digits, ties to even (Go's `decimal.Round`).
fn round(mut d: Decimal, nd: i32) -> Decimal {
    let Ok(n) = usize::try_from(nd) else {
        return d;
    };
    if n >= d.digits.len() {
        return d;
    }
    let up = match d.digits.get(n) {
        Some(b'5') if n + 1 == d.digits.len() => {
            n > 0 && d.digits.get(n - 1).is_some_and(|c| (c - b'0') % 2 == 1)
        }
        Some(&c) => c >= b'5',
        None => false,
    };
    d.digits.truncate(n);
    if up {
        // Propagate the carry; all nines become a single 1 one place up.
        loop {
            match d.digits.last_mut() {
                Some(c) if *c == b'9' => {
                    d.digits.pop();
                }
                Some(c) => {
                    *c += 1;
                    break;
                }
                None => {
                    d.digits.push(b'1');
                    d.dp += 1;
                    break;
                }
            }
        }
    }
    while d.digits.last() == Some(&b'0') {
        d.digits.pop();
    }
    d
}

/// `-d.ddde±dd`
fn fmt_e(out: &mut String, d: &Decimal, prec: i32, fmt: u8) {
    out.push(d.digits.first().map_or('0', |&c| c as char));
    if prec > 0 {
        out.push('.');
        for i in 1..=prec as usize {
            out.push(d.digits.get(i).map_or('0', |&c| c as char));
        }
    }
    out.push(fmt as char);
    let mut exp = if d.digits.is_empty() { 0 } else { d.dp - 1 };
    if exp < 0 {
        out.push('-');
        exp = -exp;
    } else {
        out.push('+');
    }
    if exp < 10 {
        out.push('0');
    }
    out.push_str(&exp.to_string());
}

/// `-ddd.ddd`
fn fmt_f(out: &mut String, d: &Decimal, prec: i32) {
    if d.dp > 0 {
        for i in 0..d.dp as usize {
            out.push(d.digits.get(i).map_or('0', |&c| c as char));
        }
    } else {
        out.push('0');
    }
    if prec > 0 {
        out.push('.');
        for i in 1..=prec {
            let j = d.dp + i - 1;
            let c = usize::try_from(j)
                .ok()
                .and_then(|j| d.digits.get(j))
                .map_or('0', |&c| c as char);
            out.push(c);
        }
    }
}

/// The mantissa and binary exponent as Go splits them (implicit bit included, exponent
/// unbiased but not yet reduced by the mantissa width).
fn split_bits(f: f64, f32_mode: bool) -> (u64, i32, u32) {
    if f32_mode {
        let bits = (f as f32).to_bits();
        let exp_field = ((bits >> 23) & 0xff) as i32;
        let mut mant = u64::from(bits & ((1 << 23) - 1));
        let mut exp = exp_field;
        if exp_field == 0 {
            exp += 1;
        } else {
            mant |= 1 << 23;
        }
        (mant, exp - 127, 23)
    } else {
        let bits = f.to_bits();
        let exp_field = ((bits >> 52) & 0x7ff) as i32;
        let mut mant = bits & ((1 << 52) - 1);
        let mut exp = exp_field;
        if exp_field == 0 {
            exp += 1;
        } else {
            mant |= 1 << 52;
        }
        (mant, exp - 1023, 52)
    }
}

/// `%b`: decimal mantissa, `p`, binary exponent (`4503599627370496p-52`).
fn format_binary(f: f64, neg: bool, f32_mode: bool) -> String {
    let (mant, exp, mantbits) = split_bits(f, f32_mode);
    let exp = exp - mantbits as i32;
    let sign = if neg { "-" } else { "" };
    let esign = if exp >= 0 { "+" } else { "" };
    format!("{sign}{mant}p{esign}{exp}")
}

/// `%x`/`%X`: hexadecimal mantissa and binary exponent (`0x1.8p+01`).
fn format_hex(f: f64, fmt: u8, prec: i32, neg: bool, f32_mode: bool) -> String {
    let (mut mant, mut exp, mantbits) = split_bits(f, f32_mode);
    if mant == 0 {
        exp = 0;
    }
    // Normalise so the leading 1 sits at bit 60.
    mant <<= 60 - mantbits;
    while mant != 0 && mant & (1 << 60) == 0 {
        mant <<= 1;
        exp -= 1;
    }
    if (0..15).contains(&prec) {
        let shift = prec as u32 * 4;
        let extra = (mant << shift) & ((1 << 60) - 1);
        mant >>= 60 - shift;
        if extra | (mant & 1) > 1 << 59 {
            mant += 1;
        }
        mant <<= 60 - shift;
        if mant & (1 << 61) != 0 {
            mant >>= 1;
            exp += 1;
        }
    }
    let hex: &[u8; 16] = if fmt == b'X' {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push('0');
    out.push(fmt as char);
    out.push(if (mant >> 60) & 1 == 1 { '1' } else { '0' });
    mant <<= 4;
    let nibble = |m: u64| hex[((m >> 60) & 15) as usize] as char;
    if prec < 0 && mant != 0 {
        out.push('.');
        while mant != 0 {
            out.push(nibble(mant));
            mant <<= 4;
        }
    } else if prec > 0 {
        out.push('.');
        for _ in 0..prec {
            out.push(nibble(mant));
            mant <<= 4;
        }
    }
    out.push(if fmt == b'X' { 'P' } else { 'p' });
    if exp < 0 {
        out.push('-');
        exp = -exp;
    } else {
        out.push('+');
    }
    if exp < 10 {
        out.push('0');
    }
    out.push_str(&exp.to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::format_float;

    #[test]
    fn shortest_g_uses_exponent_from_1e21_never_but_from_1e6() {
        assert_eq!(format_float(1e6, b'g', -1, 64), "1e+06");
        assert_eq!(format_float(999999.0, b'g', -1, 64), "999999");
        assert_eq!(format_float(1234567.0, b'g', -1, 64), "1.234567e+06");
        assert_eq!(format_float(0.0001, b'g', -1, 64), "0.0001");
        assert_eq!(format_float(0.00001, b'g', -1, 64), "1e-05");
        assert_eq!(format_float(1.5e-7, b'g', -1, 64), "1.5e-07");
        assert_eq!(format_float(2.0, b'g', -1, 64), "2");
        assert_eq!(format_float(-0.0, b'g', -1, 64), "-0");
        assert_eq!(format_float(1e100, b'g', -1, 64), "1e+100");
    }

    #[test]
    fn fixed_precision_rounds_half_to_even_on_the_exact_value() {
        assert_eq!(format_float(0.125, b'f', 2, 64), "0.12");
        assert_eq!(format_float(0.5, b'f', 0, 64), "0");
        assert_eq!(format_float(2.5, b'f', 0, 64), "2");
        assert_eq!(format_float(1.005, b'f', 2, 64), "1.00");
        assert_eq!(format_float(9.99, b'f', 1, 64), "10.0");
        assert_eq!(format_float(0.001, b'f', 1, 64), "0.0");
        assert_eq!(format_float(12345.678, b'e', 3, 64), "1.235e+04");
        assert_eq!(format_float(1.0, b'g', 3, 64), "1");
        assert_eq!(format_float(100.0, b'g', 2, 64), "1e+02");
        assert_eq!(format_float(0.0, b'e', 2, 64), "0.00e+00");
    }

    #[test]
    fn binary_and_hex_forms() {
        assert_eq!(format_float(1.0, b'b', -1, 64), "4503599627370496p-52");
        assert_eq!(format_float(0.0, b'b', -1, 64), "0p-1074");
        assert_eq!(format_float(1.0, b'x', -1, 64), "0x1p+00");
        assert_eq!(format_float(3.0, b'x', -1, 64), "0x1.8p+01");
        assert_eq!(format_float(1.0, b'X', 2, 64), "0X1.00P+00");
    }

    #[test]
    fn specials() {
        assert_eq!(format_float(f64::INFINITY, b'g', -1, 64), "+Inf");
        assert_eq!(format_float(f64::NEG_INFINITY, b'f', 2, 64), "-Inf");
        assert_eq!(format_float(f64::NAN, b'e', -1, 64), "NaN");
    }

    #[test]
    fn float32_shortest() {
        assert_eq!(format_float(0.1, b'g', -1, 32), "0.1");
        assert_eq!(format_float(0.1, b'g', -1, 64), "0.1");
        assert_eq!(
            format_float(f64::from(0.1f32), b'g', -1, 64),
            "0.10000000149011612"
        );
    }
}
