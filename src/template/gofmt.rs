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

/// How text/template prints an action's value: like [`format_value`], except that an
/// `addressable` struct whose `String` method has a pointer receiver uses it (the executor
/// takes the address of addressable values before printing), and a pointer prints the value
/// it points to.
pub fn format_action_value(v: &Value, addressable: bool) -> String {
    if addressable
        && let Value::Object(o) = v
        && let Some(s) = o.addressable_stringer()
    {
        return s;
    }
    let mut p = Printer::new();
    if p.print_pointee(v) {
        return p.finish();
    }
    format_value(v)
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
    p.sprintf(format, args);
    p.finish()
}

#[cfg(test)]
mod tests;
