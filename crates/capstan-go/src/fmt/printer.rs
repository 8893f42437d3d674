//! Go's `fmt` printer: `Sprint`, `Sprintln` and `Sprintf` over template values.
//!
//! The structure follows the documented behaviour of Go's fmt: a verb is applied to the
//! operand's dynamic type; composite values apply it to every element; an operand the verb
//! does not fit prints as `%!verb(type=value)`; formatting directives without operands or
//! with bad indexes print inline error markers.

use super::float::format_float;
use super::quote::{can_backquote, is_print, quote_bytes, quote_rune};
use crate::value::Value;

const LOWER_HEX: &[u8; 16] = b"0123456789abcdef";
const UPPER_HEX: &[u8; 16] = b"0123456789ABCDEF";
/// Widths and precisions beyond this are treated as absent, as Go does (bounds memory).
const MAX_NUM: usize = 1_000_000;

/// The flags, width and precision of one directive.
#[derive(Default, Clone)]
struct Flags {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    /// `%+v`
    plus_v: bool,
    /// `%#v`
    sharp_v: bool,
    wid: Option<usize>,
    prec: Option<usize>,
}

pub struct Printer {
    buf: Vec<u8>,
    f: Flags,
    /// Set while printing a bad-verb marker: Stringers are not consulted then.
    erroring: bool,
    /// The maps being printed: meeting one again means the value contains itself, which Go
    /// would print forever (until its stack overflows).
    open_maps: std::collections::HashSet<usize>,
    /// The Go type of the first map found to contain itself.
    cycle: Option<String>,
}

/// A value that contains itself cannot be printed (Go recurses until the process crashes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CycleError {
    pub type_name: String,
}

impl std::fmt::Display for CycleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot print a value that contains itself (a cycle through {})",
            self.type_name
        )
    }
}

impl std::error::Error for CycleError {}

impl Printer {
    pub fn new() -> Printer {
        Printer {
            buf: Vec::new(),
            f: Flags::default(),
            erroring: false,
            open_maps: std::collections::HashSet::new(),
            cycle: None,
        }
    }

    /// The text, or the cycle that made it incomplete (the text then elides the repeated map).
    pub fn finish_checked(self) -> Result<Vec<u8>, CycleError> {
        match self.cycle {
            Some(type_name) => Err(CycleError { type_name }),
            None => Ok(self.buf),
        }
    }

    /// The printed text; bytes that are not UTF-8 (from byte strings) become U+FFFD each.
    pub fn finish(self) -> String {
        crate::value::go_text(self.buf)
    }

    /// The printed bytes, as Go's `Sprint*` return them (a Go string, maybe not UTF-8).
    pub fn finish_bytes(self) -> Vec<u8> {
        self.buf
    }

    fn write(&mut self, s: &str) {
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// `fmt.Sprint`: a space between operands when neither side is a string.
    pub fn sprint(&mut self, args: &[Value]) {
        let mut prev_string = false;
        for (i, arg) in args.iter().enumerate() {
            let is_string = matches!(arg, Value::String(_) | Value::ByteString(_));
            if i > 0 && !is_string && !prev_string {
                self.buf.push(b' ');
            }
            self.print_arg(arg, 'v');
            prev_string = is_string;
        }
    }

    /// `fmt.Sprintln`: spaces between all operands and a final newline.
    pub fn sprintln(&mut self, args: &[Value]) {
        for (i, arg) in args.iter().enumerate() {
            if i > 0 {
                self.buf.push(b' ');
            }
            self.print_arg(arg, 'v');
        }
        self.buf.push(b'\n');
    }

    /// `fmt.Sprintf`.
    pub fn sprintf(&mut self, fmt: &[u8], args: &[Value]) {
        let end = fmt.len();
        let mut arg_num = 0usize;
        let mut reordered = false;
        let mut i = 0usize;
        while i < end {
            let lit_start = i;
            while i < end && fmt[i] != b'%' {
                i += 1;
            }
            if i > lit_start {
                self.buf.extend_from_slice(&fmt[lit_start..i]);
            }
            if i >= end {
                break;
            }
            i += 1; // skip '%'
            self.f = Flags::default();
            let mut good_arg_num = true;
            // Flags.
            while i < end {
                match fmt[i] {
                    b'#' => self.f.sharp = true,
                    b'0' => self.f.zero = !self.f.minus,
                    b'+' => self.f.plus = true,
                    b'-' => {
                        self.f.minus = true;
                        self.f.zero = false;
                    }
                    b' ' => self.f.space = true,
                    _ => break,
                }
                i += 1;
            }
            // Argument index before the width.
            let (n, ni, mut after_index) = arg_number(fmt, i, args.len(), &mut reordered, &mut good_arg_num);
            arg_num = n.unwrap_or(arg_num);
            i = ni;
            // Width.
            if i < end && fmt[i] == b'*' {
                i += 1;
                let (w, ok, next) = int_from_arg(args, arg_num);
                arg_num = next;
                if !ok {
                    self.write("%!(BADWIDTH)");
                    self.f.wid = None;
                } else if w < 0 {
                    self.f.minus = true;
                    self.f.zero = false;
                    self.f.wid = Some(w.unsigned_abs() as usize);
                } else {
                    self.f.wid = Some(w as usize);
                }
                after_index = false;
            } else {
                let (w, next) = parse_num(fmt, i);
                i = next;
                self.f.wid = w;
                if after_index && w.is_some() {
                    good_arg_num = false;
                }
            }
            // Precision.
            if i + 1 < end && fmt[i] == b'.' {
                i += 1;
                if after_index {
                    good_arg_num = false;
                }
                let (n, ni, ai) = arg_number(fmt, i, args.len(), &mut reordered, &mut good_arg_num);
                arg_num = n.unwrap_or(arg_num);
                i = ni;
                after_index = ai;
                if i < end && fmt[i] == b'*' {
                    i += 1;
                    let (p, ok, next) = int_from_arg(args, arg_num);
                    arg_num = next;
                    if p < 0 || !ok {
                        self.f.prec = None;
                    } else {
                        self.f.prec = Some(p as usize);
                    }
                    if p < 0 || !ok {
                        self.write("%!(BADPREC)");
                    }
                    after_index = false;
                } else {
                    let (p, next) = parse_num(fmt, i);
                    i = next;
                    self.f.prec = Some(p.unwrap_or(0));
                }
            }
            if !after_index {
                let (n, ni, _) = arg_number(fmt, i, args.len(), &mut reordered, &mut good_arg_num);
                arg_num = n.unwrap_or(arg_num);
                i = ni;
            }
            if i >= end {
                self.write("%!(NOVERB)");
                break;
            }
            let (verb, size) = match super::quote::decode_rune(&fmt[i..]) {
                Some((c, w)) => (c, w),
                None => ('\u{fffd}', 1),
            };
            i += size;
            match verb {
                '%' => self.buf.push(b'%'),
                _ if !good_arg_num => self.marker(verb, "BADINDEX"),
                _ if arg_num >= args.len() => self.marker(verb, "MISSING"),
                _ => {
                    if verb == 'v' {
                        self.f.sharp_v = self.f.sharp;
                        self.f.sharp = false;
                        self.f.plus_v = self.f.plus;
                        self.f.plus = false;
                    }
                    if let Some(arg) = args.get(arg_num) {
                        self.print_arg(arg, verb);
                    }
                    arg_num += 1;
                }
            }
        }
        if !reordered && arg_num < args.len() {
            self.f = Flags::default();
            self.write("%!(EXTRA ");
            for (k, arg) in args.iter().enumerate().skip(arg_num) {
                if k > arg_num {
                    self.write(", ");
                }
                if arg.is_nil() {
                    self.write("<nil>");
                } else {
                    let t = arg.type_name();
                    self.write(&t);
                    self.buf.push(b'=');
                    self.print_arg(arg, 'v');
                }
            }
            self.buf.push(b')');
        }
    }

    /// `%!v(MISSING)`, `%!v(BADINDEX)`.
    fn marker(&mut self, verb: char, what: &str) {
        self.write("%!");
        self.push_char(verb);
        self.buf.push(b'(');
        self.write(what);
        self.buf.push(b')');
    }

    fn push_char(&mut self, c: char) {
        let mut tmp = [0u8; 4];
        self.buf.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
    }

    /// Prints a top-level operand (Go's `printArg`).
    pub fn print_arg(&mut self, arg: &Value, verb: char) {
        if arg.is_nil() {
            match verb {
                'T' | 'v' => self.pad_str("<nil>"),
                _ => self.bad_verb(verb, arg),
            }
            return;
        }
        match verb {
            'T' => {
                let t = arg.type_name();
                self.fmt_s(&t);
                return;
            }
            'p' => {
                self.fmt_pointer(arg, verb);
                return;
            }
            _ => {}
        }
        self.print_value(arg, verb, 0);
    }

    /// A map's `%v`/`%#v` form: `map[k:v …]` or `T{"k":v, …}`, keys in sorted order.
    fn print_map(&mut self, m: &crate::value::Map, v: &Value, verb: char, depth: usize) {
        let entries = m.snapshot();
        if self.f.sharp_v {
            self.write(&v.type_name());
            self.buf.push(b'{');
        } else {
            self.write("map[");
        }
        for (k, (key, val)) in entries.iter().enumerate() {
            if k > 0 {
                self.element_separator();
            }
            self.fmt_string_verb(key.as_bytes(), verb, &Value::from(key.as_str()));
            self.buf.push(b':');
            self.print_value(val, verb, depth + 1);
        }
        self.buf.push(if self.f.sharp_v { b'}' } else { b']' });
    }

    /// Prints an operand or an element of one (Go's `printValue`): nil elements are `<nil>`.
    fn print_value(&mut self, v: &Value, verb: char, depth: usize) {
        // Deeply nested values recurse deeply: grow the stack instead of overflowing.
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.print_value_inner(v, verb, depth))
    }

    fn print_value_inner(&mut self, v: &Value, verb: char, depth: usize) {
        match v {
            Value::Nil => {
                if depth == 0 {
                    self.print_arg(v, verb);
                } else if self.f.sharp_v {
                    self.write("interface {}(nil)");
                } else {
                    self.write("<nil>");
                }
            }
            Value::Bool(b) => match verb {
                't' | 'v' => self.pad_str(if *b { "true" } else { "false" }),
                _ => self.bad_verb(verb, v),
            },
            Value::Int(i) | Value::Int64(i) => self.fmt_integer_verb(*i as u64, true, verb, v),
            Value::Uint8(u) => self.fmt_integer_verb(u64::from(*u), false, verb, v),
            Value::Uint64(u) => self.fmt_integer_verb(*u, false, verb, v),
            Value::Float(x) => self.fmt_float_verb(*x, verb, v),
            Value::String(s) => self.fmt_string_verb(s.as_bytes(), verb, v),
            Value::ByteString(b) => self.fmt_string_verb(b, verb, v),
            Value::Bytes(b) => self.fmt_bytes(b, verb, "[]byte", depth),
            // `%#v` spells a typed nil as `T(nil)`.
            Value::List(l) if l.nil && self.f.sharp_v => {
                self.write(&v.type_name());
                self.write("(nil)");
            }
            Value::Map(m) if m.nil && self.f.sharp_v => {
                self.write(&v.type_name());
                self.write("(nil)");
            }
            Value::List(l) => self.print_slice(&v.type_name(), &l.items, verb, depth),
            Value::Map(m) => {
                let id = std::rc::Rc::as_ptr(&m.entries) as *const () as usize;
                if !self.open_maps.insert(id) {
                    self.cycle.get_or_insert_with(|| v.type_name());
                    self.write("...");
                    return;
                }
                self.print_map(m, v, verb, depth);
                self.open_maps.remove(&id);
            }
            Value::Object(o) => {
                if !self.erroring
                    && !self.f.sharp_v
                    && matches!(verb, 'v' | 's' | 'x' | 'X' | 'q')
                    && let Some(s) = o.stringer()
                {
                    self.fmt_string_verb(s.as_bytes(), verb, v);
                    return;
                }
                if let Some(entries) = o.entries()
                    && !self.f.sharp_v
                {
                    // Map-typed objects (`engine.files`) print like maps.
                    self.write("map[");
                    for (k, (key, val)) in entries.iter().enumerate() {
                        if k > 0 {
                            self.buf.push(b' ');
                        }
                        self.fmt_string_verb(key.as_bytes(), verb, &Value::from(key.as_str()));
                        self.buf.push(b':');
                        self.print_value(val, verb, depth + 1);
                    }
                    self.buf.push(b']');
                    return;
                }
                if o.kind() == "slice"
                    && let Value::List(l) = o.to_data()
                {
                    // Named slice types (`common.VersionSet`) print like their elements.
                    self.print_slice(&o.type_name(), &l.items, verb, depth);
                    return;
                }
                if let Some(fields) = o.fmt_fields() {
                    let type_name = o.type_name();
                    if depth == 0 {
                        self.print_struct_operand_verb(&type_name, &fields, verb);
                    } else if type_name.starts_with('*') {
                        // Deeper down Go prints a pointer's address, which differs on every
                        // run (ours is a placeholder).
                        self.fmt_pointer(v, verb);
                    } else {
                        self.print_struct(&type_name, &fields, verb, depth);
                    }
                    return;
                }
                // Structs apply the verb field by field; with string fields (all ours
                // have) %s reads like %v.
                if verb == 'v' || (verb == 's' && o.kind() == "struct") {
                    let text = o.format();
                    self.pad(text.as_bytes());
                } else {
                    self.bad_verb(verb, v);
                }
            }
        }
    }

    /// A slice: `[a b]`, or `type{a, b}` under `%#v`; the verb applies to each element.
    fn print_slice(&mut self, type_name: &str, items: &[Value], verb: char, depth: usize) {
        if self.f.sharp_v {
            self.write(type_name);
            self.buf.push(b'{');
        } else {
            self.buf.push(b'[');
        }
        for (k, item) in items.iter().enumerate() {
            if k > 0 {
                self.element_separator();
            }
            self.print_value(item, verb, depth + 1);
        }
        self.buf.push(if self.f.sharp_v { b'}' } else { b']' });
    }

    /// Between the elements of a composite: `, ` under `%#v`, a space otherwise.
    fn element_separator(&mut self) {
        if self.f.sharp_v {
            self.write(", ");
        } else {
            self.buf.push(b' ');
        }
    }

    /// A struct: `{a b}`, `{A:a B:b}` under `%+v`, `type{A:a, B:b}` under `%#v`; the verb
    /// applies to each field.
    fn print_struct(&mut self, type_name: &str, fields: &[(&'static str, Value)], verb: char, depth: usize) {
        if self.f.sharp_v {
            self.write(type_name);
        }
        self.buf.push(b'{');
        for (k, (name, field)) in fields.iter().enumerate() {
            if k > 0 {
                self.element_separator();
            }
            if self.f.plus_v || self.f.sharp_v {
                self.write(name);
                self.buf.push(b':');
            }
            self.print_value(field, verb, depth + 1);
        }
        self.buf.push(b'}');
    }

    /// A struct as an operand in `%v`: `{…}`, or `&{…}` for a pointer to one.
    pub fn print_struct_operand(&mut self, type_name: &str, fields: &[(&'static str, Value)]) {
        self.print_struct_operand_verb(type_name, fields, 'v');
    }

    fn print_struct_operand_verb(&mut self, type_name: &str, fields: &[(&'static str, Value)], verb: char) {
        match type_name.strip_prefix('*') {
            Some(pointee) => {
                self.buf.push(b'&');
                self.print_struct(pointee, fields, verb, 1);
            }
            None => self.print_struct(type_name, fields, verb, 0),
        }
    }

    /// How text/template prints an action's value that is a pointer to a struct without a
    /// `String` method: it prints the struct pointed to (`{…}`, not `&{…}`). `false` when
    /// the value is not such a pointer.
    pub fn print_pointee(&mut self, v: &Value) -> bool {
        if let Value::Object(o) = v
            && o.stringer().is_none()
            && let Some(fields) = o.fmt_fields()
            && let Some(pointee) = o.type_name().strip_prefix('*')
        {
            self.print_struct(pointee, &fields, 'v', 0);
            return true;
        }
        false
    }

    /// `%!verb(type=value)` for an operand the verb does not apply to.
    fn bad_verb(&mut self, verb: char, arg: &Value) {
        self.erroring = true;
        self.write("%!");
        self.push_char(verb);
        self.buf.push(b'(');
        if arg.is_nil() {
            self.write("<nil>");
        } else {
            let t = arg.type_name();
            self.write(&t);
            self.buf.push(b'=');
            self.print_arg(arg, 'v');
        }
        self.buf.push(b')');
        self.erroring = false;
    }

    /// `%p`: only reference types have an address; ours is a stable placeholder since Go's
    /// addresses differ on every run anyway.
    fn fmt_pointer(&mut self, arg: &Value, verb: char) {
        match arg {
            // Only the address verbs print an address; `%s` of a pointer is a bad verb, whose
            // marker prints the value pointed to (`%!s(*T=&{…})`).
            _ if !matches!(verb, 'v' | 'p' | 'b' | 'o' | 'd' | 'x' | 'X') => self.bad_verb(verb, arg),
            // Only reference kinds have an address; a struct value is a bad verb.
            Value::Object(o) if !matches!(o.kind(), "ptr" | "map" | "slice") => self.bad_verb(verb, arg),
            Value::Map(_) | Value::List(_) | Value::Bytes(_) | Value::Object(_) => {
                let saved = self.f.sharp;
                self.f.sharp = !self.f.sharp;
                // Twelve hex digits, like the heap addresses Helm prints, so widths pad alike.
                self.fmt_integer(0x1c0000010000, 16, false, 'v', LOWER_HEX);
                self.f.sharp = saved;
            }
            _ => self.bad_verb(verb, arg),
        }
    }

    // ---- integers ----

    fn fmt_integer_verb(&mut self, u: u64, signed: bool, verb: char, arg: &Value) {
        match verb {
            'v' => {
                if self.f.sharp_v && !signed {
                    self.fmt_0x64(u, true);
                } else {
                    self.fmt_integer(u, 10, signed, verb, LOWER_HEX);
                }
            }
            'd' => self.fmt_integer(u, 10, signed, verb, LOWER_HEX),
            'b' => self.fmt_integer(u, 2, signed, verb, LOWER_HEX),
            'o' | 'O' => self.fmt_integer(u, 8, signed, verb, LOWER_HEX),
            'x' => self.fmt_integer(u, 16, signed, verb, LOWER_HEX),
            'X' => self.fmt_integer(u, 16, signed, verb, UPPER_HEX),
            'c' => {
                let r = rune_of(u);
                let mut tmp = [0u8; 4];
                let bytes = r.encode_utf8(&mut tmp).as_bytes().to_vec();
                self.pad(&bytes);
            }
            'q' => {
                let r = rune_of(u);
                let text = if self.f.sharp && is_print(r) {
                    format!("'{r}'")
                } else {
                    quote_rune(r, self.f.plus)
                };
                self.pad(text.as_bytes());
            }
            'U' => self.fmt_unicode(u),
            _ => self.bad_verb(verb, arg),
        }
    }

    fn fmt_0x64(&mut self, u: u64, leading_0x: bool) {
        let saved = self.f.sharp;
        self.f.sharp = leading_0x;
        self.fmt_integer(u, 16, false, 'v', LOWER_HEX);
        self.f.sharp = saved;
    }

    /// Go's `fmtInteger`: precision or zero flag pad with zeros, then prefix and sign.
    fn fmt_integer(&mut self, u: u64, base: u64, signed: bool, verb: char, digits: &[u8; 16]) {
        let negative = signed && (u as i64) < 0;
        let mut u = if negative { (u as i64).unsigned_abs() } else { u };
        let mut prec = 0usize;
        if let Some(p) = self.f.prec {
            prec = p;
            if p == 0 && u == 0 {
                let saved = self.f.zero;
                self.f.zero = false;
                let w = self.f.wid.unwrap_or(0);
                self.write_padding(w);
                self.f.zero = saved;
                return;
            }
        } else if self.f.zero
            && !self.f.minus
            && let Some(w) = self.f.wid
        {
            prec = w;
            if negative || self.f.plus || self.f.space {
                prec = prec.saturating_sub(1);
            }
        }
        // Digits, least significant first.
        let mut rev: Vec<u8> = Vec::with_capacity(24 + prec);
        loop {
            rev.push(digits[(u % base) as usize]);
            u /= base;
            if u == 0 {
                break;
            }
        }
        while rev.len() < prec {
            rev.push(b'0');
        }
        if self.f.sharp {
            match base {
                2 => rev.extend_from_slice(b"b0"),
                8 if rev.last() != Some(&b'0') => rev.push(b'0'),
                16 => {
                    rev.push(digits[10] + (b'x' - b'a'));
                    rev.push(b'0');
                }
                _ => {}
            }
        }
        if verb == 'O' {
            rev.extend_from_slice(b"o0");
        }
        if negative {
            rev.push(b'-');
        } else if self.f.plus {
            rev.push(b'+');
        } else if self.f.space {
            rev.push(b' ');
        }
        rev.reverse();
        let saved = self.f.zero;
        self.f.zero = false;
        self.pad(&rev);
        self.f.zero = saved;
    }

    /// `%U`: `U+0041`, with `#` also the character when printable.
    fn fmt_unicode(&mut self, u: u64) {
        let width = self.f.prec.unwrap_or(4).max(4);
        let mut text = format!("U+{u:0width$X}");
        if self.f.sharp
            && let Some(r) = u32::try_from(u).ok().and_then(char::from_u32)
            && is_print(r)
        {
            text.push_str(&format!(" '{r}'"));
        }
        let saved = self.f.zero;
        self.f.zero = false;
        self.pad(text.as_bytes());
        self.f.zero = saved;
    }

    // ---- floats ----

    fn fmt_float_verb(&mut self, x: f64, verb: char, arg: &Value) {
        match verb {
            'v' => self.fmt_float(x, b'g', -1),
            'b' | 'g' | 'G' | 'x' | 'X' => self.fmt_float(x, verb as u8, -1),
            'f' | 'e' | 'E' | 'F' => self.fmt_float(x, verb as u8, 6),
            _ => self.bad_verb(verb, arg),
        }
    }

    /// Go's `fmt.fmtFloat`: sign handling, `#` decimal point rules, zero padding after the sign.
    fn fmt_float(&mut self, x: f64, verb: u8, prec: i32) {
        let prec = self.f.prec.map_or(prec, |p| p.min(i32::MAX as usize) as i32);
        let conv = if verb == b'F' { b'f' } else { verb };
        let text = format_float(x, conv, prec, 64);
        let mut num: Vec<u8> = Vec::with_capacity(text.len() + 8);
        if text.starts_with('-') || text.starts_with('+') {
            num.extend_from_slice(text.as_bytes());
        } else {
            num.push(b'+');
            num.extend_from_slice(text.as_bytes());
        }
        if self.f.space && num[0] == b'+' && !self.f.plus {
            num[0] = b' ';
        }
        if matches!(num.get(1), Some(b'I' | b'N')) {
            let saved = self.f.zero;
            self.f.zero = false;
            if num.get(1) == Some(&b'N') && !self.f.space && !self.f.plus {
                num.remove(0);
            }
            self.pad(&num);
            self.f.zero = saved;
            return;
        }
        if self.f.sharp && verb != b'b' {
            let mut digits: i64 = match verb {
                b'v' | b'g' | b'G' | b'x' => {
                    if prec == -1 {
                        6
                    } else {
                        i64::from(prec)
                    }
                }
                _ => 0,
            };
            let mut tail: Vec<u8> = Vec::new();
            let mut has_point = false;
            let mut saw_nonzero = false;
            let mut k = 1;
            while k < num.len() {
                match num[k] {
                    b'.' => has_point = true,
                    b'p' | b'P' => {
                        tail.extend_from_slice(&num[k..]);
                        num.truncate(k);
                        break;
                    }
                    b'e' | b'E' if verb != b'x' && verb != b'X' => {
                        tail.extend_from_slice(&num[k..]);
                        num.truncate(k);
                        break;
                    }
                    c => {
                        if c != b'0' {
                            saw_nonzero = true;
                        }
                        if saw_nonzero {
                            digits -= 1;
                        }
                    }
                }
                k += 1;
            }
            if !has_point {
                if num.len() == 2 && num[1] == b'0' {
                    digits -= 1;
                }
                num.push(b'.');
            }
            while digits > 0 {
                num.push(b'0');
                digits -= 1;
            }
            num.extend_from_slice(&tail);
        }
        if self.f.plus || num[0] != b'+' {
            if self.f.zero
                && !self.f.minus
                && let Some(w) = self.f.wid
                && w > num.len()
            {
                self.buf.push(num[0]);
                self.write_padding(w - num.len());
                self.buf.extend_from_slice(&num[1..]);
                return;
            }
            self.pad(&num);
            return;
        }
        self.pad(&num[1..]);
    }

    // ---- strings and bytes ----

    fn fmt_string_verb(&mut self, s: &[u8], verb: char, arg: &Value) {
        match verb {
            'v' => {
                if self.f.sharp_v {
                    self.fmt_q(s);
                } else {
                    self.fmt_s_bytes(s);
                }
            }
            's' => self.fmt_s_bytes(s),
            'x' => self.fmt_sbx(s, LOWER_HEX),
            'X' => self.fmt_sbx(s, UPPER_HEX),
            'q' => self.fmt_q(s),
            _ => self.bad_verb(verb, arg),
        }
    }

    fn fmt_bytes(&mut self, b: &[u8], verb: char, type_name: &str, depth: usize) {
        match verb {
            'v' | 'd' => {
                if self.f.sharp_v {
                    self.write(type_name);
                    self.buf.push(b'{');
                    for (k, &c) in b.iter().enumerate() {
                        if k > 0 {
                            self.write(", ");
                        }
                        self.fmt_0x64(u64::from(c), true);
                    }
                    self.buf.push(b'}');
                } else {
                    self.buf.push(b'[');
                    for (k, &c) in b.iter().enumerate() {
                        if k > 0 {
                            self.buf.push(b' ');
                        }
                        self.fmt_integer(u64::from(c), 10, false, verb, LOWER_HEX);
                    }
                    self.buf.push(b']');
                }
            }
            's' => self.fmt_s_bytes(b),
            'x' => self.fmt_sbx(b, LOWER_HEX),
            'X' => self.fmt_sbx(b, UPPER_HEX),
            'q' => self.fmt_q(b),
            _ => {
                // Other verbs apply to each byte as a uint8.
                self.buf.push(b'[');
                for (k, &c) in b.iter().enumerate() {
                    if k > 0 {
                        self.buf.push(b' ');
                    }
                    self.print_value(&Value::Uint8(c), verb, depth + 1);
                }
                self.buf.push(b']');
            }
        }
    }

    /// `%s`: the precision truncates to that many runes.
    fn fmt_s_bytes(&mut self, s: &[u8]) {
        let s = self.truncate(s);
        self.pad(s);
    }

    fn fmt_s(&mut self, s: &str) {
        self.fmt_s_bytes(s.as_bytes());
    }

    fn truncate<'a>(&self, s: &'a [u8]) -> &'a [u8] {
        let Some(p) = self.f.prec else {
            return s;
        };
        let mut n = 0usize;
        let mut idx = 0usize;
        while idx < s.len() {
            if n == p {
                return &s[..idx];
            }
            idx += rune_width(&s[idx..]);
            n += 1;
        }
        s
    }

    /// `%q`: Go-quoted, or back-quoted with `#` when possible; `+` quotes to ASCII.
    fn fmt_q(&mut self, s: &[u8]) {
        let s = self.truncate(s);
        if self.f.sharp && can_backquote(s) {
            let mut text = Vec::with_capacity(s.len() + 2);
            text.push(b'`');
            text.extend_from_slice(s);
            text.push(b'`');
            self.pad(&text);
        } else {
            let text = quote_bytes(s, b'"', self.f.plus);
            self.pad(text.as_bytes());
        }
    }

    /// `%x` on strings and byte slices, honouring precision, `#` and ` `.
    fn fmt_sbx(&mut self, s: &[u8], digits: &[u8; 16]) {
        let mut length = s.len();
        if let Some(p) = self.f.prec
            && p < length
        {
            length = p;
        }
        let mut width = 2 * length;
        if width > 0 {
            if self.f.space {
                if self.f.sharp {
                    width *= 2;
                }
                width += length - 1;
            } else if self.f.sharp {
                width += 2;
            }
        } else {
            if let Some(w) = self.f.wid {
                self.write_padding(w);
            }
            return;
        }
        let wid = self.f.wid.unwrap_or(0);
        if wid > width && !self.f.minus {
            self.write_padding(wid - width);
        }
        let x = digits[10] + (b'x' - b'a');
        if self.f.sharp {
            self.buf.push(b'0');
            self.buf.push(x);
        }
        for (k, &c) in s.iter().take(length).enumerate() {
            if self.f.space && k > 0 {
                self.buf.push(b' ');
                if self.f.sharp {
                    self.buf.push(b'0');
                    self.buf.push(x);
                }
            }
            self.buf.push(digits[(c >> 4) as usize]);
            self.buf.push(digits[(c & 0xf) as usize]);
        }
        if wid > width && self.f.minus {
            self.write_padding(wid - width);
        }
    }

    // ---- padding ----

    fn write_padding(&mut self, n: usize) {
        let byte = if self.f.zero { b'0' } else { b' ' };
        self.buf.extend(std::iter::repeat_n(byte, n));
    }

    fn pad_str(&mut self, s: &str) {
        self.pad(s.as_bytes());
    }

    /// Pads to the width (counted in runes), left or right.
    fn pad(&mut self, b: &[u8]) {
        let Some(wid) = self.f.wid.filter(|&w| w > 0) else {
            self.buf.extend_from_slice(b);
            return;
        };
        let runes = rune_count(b);
        let fill = wid.saturating_sub(runes);
        if self.f.minus {
            self.buf.extend_from_slice(b);
            let saved = self.f.zero;
            self.f.zero = false;
            self.write_padding(fill);
            self.f.zero = saved;
        } else {
            self.write_padding(fill);
            self.buf.extend_from_slice(b);
        }
    }
}

/// The character `%c`/`%q` print for an integer: invalid code points become U+FFFD.
fn rune_of(u: u64) -> char {
    u32::try_from(u)
        .ok()
        .and_then(char::from_u32)
        .unwrap_or('\u{fffd}')
}

fn rune_width(s: &[u8]) -> usize {
    super::quote::decode_rune(s).map_or(1, |(_, w)| w)
}

fn rune_count(s: &[u8]) -> usize {
    let mut n = 0;
    let mut idx = 0;
    while idx < s.len() {
        idx += rune_width(&s[idx..]);
        n += 1;
    }
    n
}

/// Parses a decimal number at `i`; `None` when there are no digits. A number that grows
/// too large swallows the rest of the format, as in Go.
fn parse_num(fmt: &[u8], mut i: usize) -> (Option<usize>, usize) {
    let mut num = 0usize;
    let mut any = false;
    while let Some(&c) = fmt.get(i) {
        if !c.is_ascii_digit() {
            break;
        }
        if num > MAX_NUM {
            return (None, fmt.len());
        }
        num = num * 10 + usize::from(c - b'0');
        any = true;
        i += 1;
    }
    (any.then_some(num), i)
}

/// An explicit argument index `[n]` at `i`: the new argument number (if valid), the
/// position after it, and whether an index was present.
fn arg_number(
    fmt: &[u8],
    i: usize,
    num_args: usize,
    reordered: &mut bool,
    good_arg_num: &mut bool,
) -> (Option<usize>, usize, bool) {
    if fmt.get(i) != Some(&b'[') {
        return (None, i, false);
    }
    *reordered = true;
    let rest = &fmt[i..];
    let (index, width, ok) = parse_arg_number(rest);
    if ok
        && let Some(ix) = index
        && ix < num_args
    {
        return (Some(ix), i + width, true);
    }
    *good_arg_num = false;
    (None, i + width, ok)
}

/// Parses `[n]`: (zero-based index, bytes consumed, well-formed).
fn parse_arg_number(s: &[u8]) -> (Option<usize>, usize, bool) {
    if s.len() < 3 {
        return (None, 1, false);
    }
    for k in 1..s.len() {
        if s[k] == b']' {
            let (n, next) = parse_num(s, 1);
            return match n {
                Some(n) if next == k => (n.checked_sub(1), k + 1, true),
                _ => (None, k + 1, false),
            };
        }
    }
    (None, 1, false)
}

/// A `*` width or precision: the operand must be an integer within ±1e6.
fn int_from_arg(args: &[Value], arg_num: usize) -> (i64, bool, usize) {
    let Some(arg) = args.get(arg_num) else {
        return (0, false, arg_num);
    };
    let (n, ok) = match arg {
        Value::Int(i) | Value::Int64(i) => (*i, true),
        Value::Uint8(u) => (i64::from(*u), true),
        Value::Uint64(u) => i64::try_from(*u).map_or((0, false), |n| (n, true)),
        _ => (0, false),
    };
    if ok && n.unsigned_abs() > MAX_NUM as u64 {
        return (0, false, arg_num + 1);
    }
    (n, ok, arg_num + 1)
}
