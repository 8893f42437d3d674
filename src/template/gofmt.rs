//! Go's `fmt` and `strconv` printing rules, which templates observe everywhere: the text of
//! an action (`{{ 1.5 }}`), `print`/`printf`/`println`, error messages (`%q`), and the
//! `html`/`js`/`urlquery` escapers.

mod escape;
mod float;
mod printer;
mod quote;

pub use escape::{html_escape, js_escape, query_escape};
pub use float::format_float;
pub use quote::{is_print, quote, quote_bytes, quote_rune};

use crate::template::value::Value;
use printer::Printer;

/// Go's `fmt.Sprint` of one value: `%v` (`<nil>`, `map[a:1]`, `[a b]`, `1e+06`).
pub fn format_value(v: &Value) -> String {
    let mut p = Printer::new();
    p.print_arg(v, 'v');
    p.finish()
}

/// How text/template prints an action's value: like [`format_value`], except that a struct
/// whose `String` method has a pointer receiver uses it (the executor takes the address of
/// addressable values before printing).
pub fn format_action_value(v: &Value) -> Vec<u8> {
    if let Value::Object(o) = v
        && let Some(s) = o.addressable_stringer()
    {
        return s.into_bytes();
    }
    format_value_bytes(v)
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

/// [`sprint`] as a Go string value (see [`sprint_bytes`]).
pub fn sprint_value(args: &[Value]) -> Value {
    Value::from_go_bytes(sprint_bytes(args))
}

/// [`sprintln`] as a Go string value.
pub fn sprintln_value(args: &[Value]) -> Value {
    let mut p = Printer::new();
    p.sprintln(args);
    Value::from_go_bytes(p.finish_bytes())
}

/// [`sprintf`] as a Go string value, with the format given as Go string bytes.
pub fn sprintf_value(format: &[u8], args: &[Value]) -> Value {
    let mut p = Printer::new();
    p.sprintf(format, args);
    Value::from_go_bytes(p.finish_bytes())
}

/// [`format_value`] as the bytes Go prints (`%v`), byte strings included.
pub fn format_value_bytes(v: &Value) -> Vec<u8> {
    let mut p = Printer::new();
    p.print_arg(v, 'v');
    p.finish_bytes()
}

#[cfg(test)]
mod tests;
