//! The registry: a function's Go signature and implementation ([`Func`]), what it may ask of
//! the executor ([`CallContext`]), the named set templates see ([`FuncMap`]) and the argument
//! readers the families share. The families depend on it; the maps of whole families are
//! assembled in `funcs/mod.rs`, above both.

use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;

use crate::error::FuncError;
use capstan_go::value::{GoType, Method, Value};

/// What a function can ask of the executor that calls it.
pub trait CallContext {
    /// Executes the named template with `data` and returns its output (Helm's `include`):
    /// bytes, since byte strings may leave invalid UTF-8 in it.
    fn include(&mut self, name: &str, data: Value) -> Result<Vec<u8>, FuncError>;

    /// Parses `text` into a copy of the template set under the root name and executes it
    /// with `data` (Helm's `tpl`); the result has `<no value>` removed like a file's output.
    fn tpl(&mut self, text: &str, data: Value) -> Result<Vec<u8>, FuncError>;
}

/// A context for calling functions outside an executor (unit tests): `include` and `tpl`
/// are errors.
#[cfg(test)]
pub struct NoContext;

#[cfg(test)]
impl CallContext for NoContext {
    fn include(&mut self, _: &str, _: Value) -> Result<Vec<u8>, FuncError> {
        Err(FuncError::msg("no include outside an executor"))
    }
    fn tpl(&mut self, _: &str, _: Value) -> Result<Vec<u8>, FuncError> {
        Err(FuncError::msg("no tpl outside an executor"))
    }
}

/// The implementation of a function: receives arguments already checked against the
/// signature (so a `String` parameter always holds `Value::String`, unless the function
/// was made with [`Func::keeping_bytes`], when it may also hold a `Value::ByteString`).
pub type FuncImpl = Rc<dyn Fn(&mut dyn CallContext, &[Value]) -> Result<Value, FuncError>>;

/// A callable template function with its Go signature.
#[derive(Clone)]
pub struct Func {
    pub params: Vec<GoType>,
    /// The element type of a trailing `...T` parameter.
    pub variadic: Option<GoType>,
    pub imp: FuncImpl,
    /// Builtins the executor treats specially (short-circuit `and`/`or`).
    pub special: Option<Special>,
    /// Whether `string` parameters receive byte strings as they are (see
    /// [`Func::keeping_bytes`]).
    pub keep_bytes: bool,
}

/// Builtins with evaluation rules of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    And,
    Or,
}

impl Func {
    /// A function with fixed parameters.
    pub fn new(
        params: &[GoType],
        imp: impl Fn(&mut dyn CallContext, &[Value]) -> Result<Value, FuncError> + 'static,
    ) -> Func {
        Func {
            params: params.to_vec(),
            variadic: None,
            imp: Rc::new(imp),
            special: None,
            keep_bytes: false,
        }
    }

    /// A function whose last parameter is `...variadic`.
    pub fn variadic(
        params: &[GoType],
        variadic: GoType,
        imp: impl Fn(&mut dyn CallContext, &[Value]) -> Result<Value, FuncError> + 'static,
    ) -> Func {
        Func {
            params: params.to_vec(),
            variadic: Some(variadic),
            imp: Rc::new(imp),
            special: None,
            keep_bytes: false,
        }
    }

    /// A pure function with fixed parameters that needs no context.
    pub fn pure(params: &[GoType], imp: impl Fn(&[Value]) -> Result<Value, FuncError> + 'static) -> Func {
        Func::new(params, move |_, args| imp(args))
    }

    /// A pure variadic function that needs no context.
    pub fn pure_variadic(
        params: &[GoType],
        variadic: GoType,
        imp: impl Fn(&[Value]) -> Result<Value, FuncError> + 'static,
    ) -> Func {
        Func::variadic(params, variadic, move |_, args| imp(args))
    }

    /// A function that works on the bytes of its `string` parameters (`len`-like counting,
    /// cutting, hashing, encoding): they receive a [`Value::ByteString`] unchanged. Every
    /// other function sees a byte string passed for a `string` parameter as Go decodes it
    /// to text (one U+FFFD per invalid byte), so it needs no case for it.
    pub fn keeping_bytes(mut self) -> Func {
        self.keep_bytes = true;
        self
    }

    /// Prepares arguments already checked against the signature for the implementation:
    /// byte strings in `string` parameters become text unless the function keeps bytes.
    pub fn prepare_args(&self, args: &mut [Value]) {
        if self.keep_bytes {
            return;
        }
        for (i, arg) in args.iter_mut().enumerate() {
            if matches!(arg, Value::ByteString(_)) && self.param_type(i) == GoType::String {
                *arg = std::mem::replace(arg, Value::Nil).into_lossy();
            }
        }
    }

    /// The type of the i-th argument (fixed or variadic).
    pub fn param_type(&self, i: usize) -> GoType {
        match self.params.get(i) {
            Some(t) => *t,
            None => self.variadic.unwrap_or(GoType::Any),
        }
    }
}

/// A method of a value, callable like a function (`.Files.Get "x"`, `$t.Format "…"`).
impl From<Method> for Func {
    fn from(m: Method) -> Func {
        let call = m.call;
        Func::pure(&m.params, move |args| call(args).map_err(FuncError::Message))
    }
}

/// A set of named functions available to templates.
#[derive(Clone, Default)]
pub struct FuncMap {
    funcs: HashMap<String, Rc<Func>>,
}

impl FuncMap {
    pub fn new() -> FuncMap {
        FuncMap::default()
    }

    pub fn insert(&mut self, name: &str, func: Func) {
        self.funcs.insert(name.to_string(), Rc::new(func));
    }

    pub fn remove(&mut self, name: &str) {
        self.funcs.remove(name);
    }

    pub fn get(&self, name: &str) -> Option<Rc<Func>> {
        self.funcs.get(name).cloned()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.funcs.contains_key(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.funcs.keys().map(String::as_str)
    }
}

/// The string in an argument the signature declared as `string` (of a function that does
/// not keep bytes, so it is never a byte string).
pub fn arg_str(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// The bytes of an argument the signature declared as `string`, byte strings included.
pub fn arg_bytes(v: &Value) -> &[u8] {
    v.go_str_bytes().unwrap_or_default()
}

/// The integer in an argument the signature declared as `int`/`int64`.
pub fn arg_int(v: &Value) -> i64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Uint8(u) => i64::from(*u),
        Value::Uint64(u) => *u as i64,
        _ => 0,
    }
}
