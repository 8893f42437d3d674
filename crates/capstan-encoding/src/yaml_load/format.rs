//! The few Go formatting rules the loader's outputs and errors need.

/// `strconv.FormatFloat(f, 'g', -1, 64 or 32)`: shortest digits, exponent form when the
/// exponent is below -4 or at least 21 (precision -1 uses 21, not 6).
pub fn go_float_g(f: f64, float32: bool) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    // `{:e}` gives the shortest round-tripping digits: "1.2345e6", "-5e-7".
    let sci = if float32 {
        format!("{:e}", f as f32)
    } else {
        format!("{f:e}")
    };
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if neg { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{esign}{:02}", exp.abs());
    }
    let n = digits.len() as i32;
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        format!("{sign}0.{zeros}{digits}")
    } else if exp + 1 >= n {
        let zeros = "0".repeat((exp + 1 - n) as usize);
        format!("{sign}{digits}{zeros}")
    } else {
        let (a, b) = digits.split_at((exp + 1) as usize);
        format!("{sign}{a}.{b}")
    }
}

/// Go's `%q` / `strconv.Quote` for the strings in error messages.
pub fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortest_g() {
        assert_eq!(go_float_g(1000.0, false), "1000");
        assert_eq!(go_float_g(1e20, false), "1e+20");
        assert_eq!(go_float_g(123456.0, false), "123456");
        assert_eq!(go_float_g(1234567.0, false), "1.234567e+06");
        assert_eq!(go_float_g(1e21, false), "1e+21");
        assert_eq!(go_float_g(0.1, false), "0.1");
        assert_eq!(go_float_g(1e-6, false), "1e-06");
        assert_eq!(go_float_g(0.0001, false), "0.0001");
        assert_eq!(go_float_g(1.234_567_891_234, true), "1.2345679");
        assert_eq!(go_float_g(12345678.9, true), "1.2345679e+07");
        assert_eq!(go_float_g(1.10, true), "1.1");
        assert_eq!(go_float_g(-2.5, false), "-2.5");
    }
}
