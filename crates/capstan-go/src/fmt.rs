//! Go's `fmt` and `strconv` printing rules, which templates observe everywhere: the text of
//! an action (`{{ 1.5 }}`), `print`/`printf`/`println`, error messages (`%q`), and the
//! `html`/`js`/`urlquery` escapers.

mod escape;
mod float;
mod printer;
mod quote;

pub use escape::{html_escape, js_escape, query_escape};
pub use float::format_float;
pub use quote::{decode_rune, is_print, quote, quote_bytes, quote_rune};

pub use printer::CycleError;

use crate::value::Value;
use printer::Printer;

/// Go's `strconv` rule for `_` in numbers (`underscoreOK`): only between digits, or after a
/// base prefix. Template literals and `ParseFloat` (YAML values) share it.
pub fn underscore_ok(s: &str) -> bool {
    let b = s.strip_prefix(['+', '-']).unwrap_or(s).as_bytes();
    let mut saw = b'^';
    let mut i = 0;
    let mut hex = false;
    if b.len() >= 2 && b[0] == b'0' && matches!(b[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = b[1].eq_ignore_ascii_case(&b'x');
    }
    while i < b.len() {
        let c = b[i];
        i += 1;
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
            continue;
        }
        if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
            continue;
        }
        if saw == b'_' {
            return false;
        }
        saw = b'!';
    }
    saw != b'_'
}

// The plain functions below never fail: a value that contains itself prints its repeated map
// as `...`. The `try_` forms report that cycle instead, for output a user sees (an action's
// text, `print`, `printf`, `println`, `toString`), where Go would crash. The `_value` forms
// return Go strings, which keep the bytes of operands that are not UTF-8.

/// Go's `fmt.Sprint` of one value: `%v` (`<nil>`, `map[a:1]`, `[a b]`, `1e+06`).
pub fn format_value(v: &Value) -> String {
    let mut p = Printer::new();
    p.print_arg(v, 'v');
    p.finish()
}

/// Go's `%v` of a struct (`{a b}`), or of a pointer to one (`&{a b}`) when `type_name`
/// starts with `*`.
pub fn format_struct(type_name: &str, fields: &[(&'static str, Value)]) -> String {
    let mut p = Printer::new();
    p.print_struct_operand(type_name, fields);
    p.finish()
}

/// [`format_value`] as the bytes Go prints (`%v`), byte strings included.
pub fn format_value_bytes(v: &Value) -> Vec<u8> {
    let mut p = Printer::new();
    p.print_arg(v, 'v');
    p.finish_bytes()
}

/// [`format_value`] as a Go string, or the cycle that keeps it from being printed.
pub fn try_format_value(v: &Value) -> Result<Value, CycleError> {
    let mut p = Printer::new();
    p.print_arg(v, 'v');
    p.finish_checked().map(Value::from_go_bytes)
}

/// How text/template prints an action's value: like [`format_value`], except that an
/// `addressable` struct whose `String` method has a pointer receiver uses it (the executor
/// takes the address of addressable values before printing), and a pointer prints the value
/// it points to. A value that contains itself is an error.
pub fn try_format_action_value(v: &Value, addressable: bool) -> Result<Vec<u8>, CycleError> {
    if addressable
        && let Value::Object(o) = v
        && let Some(s) = o.addressable_stringer()
    {
        return Ok(s.into_bytes());
    }
    let mut p = Printer::new();
    if !p.print_pointee(v) {
        p.print_arg(v, 'v');
    }
    p.finish_checked()
}

/// Go's `fmt.Sprint`: operands in `%v`, a space between two operands when neither is a string.
pub fn sprint(args: &[Value]) -> String {
    let mut p = Printer::new();
    p.sprint(args);
    p.finish()
}

/// Go's `fmt.Sprintln`: operands in `%v` separated by spaces, then a newline.
pub fn sprintln(args: &[Value]) -> String {
    let mut p = Printer::new();
    p.sprintln(args);
    p.finish()
}

/// Go's `fmt.Sprintf`, error markers (`%!d(string=x)`, `%!(EXTRA …)`) included.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut p = Printer::new();
    p.sprintf(format.as_bytes(), args);
    p.finish()
}

/// [`sprint`] as the bytes Go prints: byte strings among the operands keep their bytes.
pub fn sprint_bytes(args: &[Value]) -> Vec<u8> {
    let mut p = Printer::new();
    p.sprint(args);
    p.finish_bytes()
}

/// [`sprint`] as a Go string, or the cycle that keeps it from being printed.
pub fn try_sprint_value(args: &[Value]) -> Result<Value, CycleError> {
    let mut p = Printer::new();
    p.sprint(args);
    p.finish_checked().map(Value::from_go_bytes)
}

/// [`sprintln`] as a Go string, or the cycle that keeps it from being printed.
pub fn try_sprintln_value(args: &[Value]) -> Result<Value, CycleError> {
    let mut p = Printer::new();
    p.sprintln(args);
    p.finish_checked().map(Value::from_go_bytes)
}

/// [`sprintf`] (format given as Go string bytes) as a Go string, or the cycle that keeps it
/// from being printed.
pub fn try_sprintf_value(format: &[u8], args: &[Value]) -> Result<Value, CycleError> {
    let mut p = Printer::new();
    p.sprintf(format, args);
    p.finish_checked().map(Value::from_go_bytes)
}

#[cfg(test)]
mod tests;
