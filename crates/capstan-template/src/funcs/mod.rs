//! Template functions: typed signatures, the registry, and the function families.
//!
//! Every function declares Go parameter types so the executor applies text/template's
//! argument rules (`validateType`): numbers are never converted (`nindent` of a `float64` is
//! an error), nil is accepted only where Go accepts it, literals are typed by the parameter.

pub mod builtins;
pub mod conversion;
pub mod crypto;
pub mod dates;
pub mod defaults;
pub mod dicts;
pub mod encoding;
mod env;
pub mod helm;
pub mod lists;
pub mod math;
pub mod paths;
pub mod random;
pub mod reflection;
pub mod regex;
pub mod semver;
pub mod sprig;
pub mod strings;
pub mod urls;

pub use env::{FuncEnv, Lookup, LookupRequest};

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

    /// The Go text/template builtins (`and`, `or`, `eq`, `index`, `printf`, …).
    pub fn with_builtins() -> FuncMap {
        let mut map = FuncMap::new();
        builtins::register(&mut map);
        map
    }

    /// Everything Helm v4.2.3 offers templates: the builtins, sprig (minus `env`/`expandenv`)
    /// and Helm's own functions, as far as implemented.
    pub fn helm() -> FuncMap {
        FuncMap::helm_with(&Rc::new(FuncEnv::system()))
    }

    /// [`FuncMap::helm`] with an explicit source of randomness and time.
    pub fn helm_with(env: &Rc<FuncEnv>) -> FuncMap {
        let mut map = FuncMap::with_builtins();
        sprig::register(&mut map, env);
        helm::register(&mut map, env);
        map
    }

    /// [`FuncMap::helm_with`] built once per thread and environment: the last map built on
    /// this thread is reused while renders pass the same `env` (the same `Rc`), so repeated
    /// renders with one [`FuncEnv`] share one map. The functions capture `env` itself, so a
    /// seeded environment stays deterministic; a different `env` builds (and caches) a new map.
    pub fn helm_shared(env: &Rc<FuncEnv>) -> Rc<FuncMap> {
        thread_local! {
            static HELM: std::cell::RefCell<Option<(Rc<FuncEnv>, Rc<FuncMap>)>> =
                const { std::cell::RefCell::new(None) };
        }
        HELM.with(|cell| {
            let mut cached = cell.borrow_mut();
            if let Some((cached_env, map)) = cached.as_ref()
                && Rc::ptr_eq(cached_env, env)
            {
                return Rc::clone(map);
            }
            let map = Rc::new(FuncMap::helm_with(env));
            *cached = Some((Rc::clone(env), Rc::clone(&map)));
            map
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_strings_reach_string_parameters_decoded_unless_kept() {
        let cut = Value::from_go_bytes(&b"h\xc3"[..]);
        let id = |args: &[Value]| Ok(args[0].clone());
        let mut args = vec![cut.clone(), cut.clone()];
        Func::pure(&[GoType::String, GoType::Any], id).prepare_args(&mut args);
        assert_eq!(args[0].as_str(), Some("h\u{fffd}"));
        // `interface {}` parameters see the value as it is.
        assert!(matches!(&args[1], Value::ByteString(_)));

        let mut args = vec![cut.clone()];
        Func::pure_variadic(&[], GoType::String, id).prepare_args(&mut args);
        assert_eq!(args[0].as_str(), Some("h\u{fffd}"));

        let mut args = vec![cut];
        Func::pure(&[GoType::String], id)
            .keeping_bytes()
            .prepare_args(&mut args);
        assert_eq!(arg_bytes(&args[0]), b"h\xc3");
    }

    #[test]
    fn shared_helm_map_is_reused_per_env_and_keeps_seeded_output() {
        use crate::Templates;
        let render = |env: &Rc<FuncEnv>| {
            let mut set = Templates::with_funcs(FuncMap::helm_shared(env));
            set.parse("t", "{{ randAlphaNum 12 }}").expect("parses");
            set.execute("t", &Value::Nil).expect("executes")
        };
        let a = Rc::new(FuncEnv::deterministic(7, 0));
        assert!(Rc::ptr_eq(&FuncMap::helm_shared(&a), &FuncMap::helm_shared(&a)));
        let first = render(&a);
        // A fresh env with the same seed gets its own map and the same sequence.
        let b = Rc::new(FuncEnv::deterministic(7, 0));
        assert!(!Rc::ptr_eq(&FuncMap::helm_shared(&a), &FuncMap::helm_shared(&b)));
        assert_eq!(render(&b), first);
        // The same env continues its sequence, as with a map built per render.
        assert_ne!(render(&a), first);
    }

    #[test]
    fn lookup_answers_from_the_env_else_finds_nothing() {
        use crate::Templates;
        let text = r#"{{ $s := lookup "v1" "Secret" "ns" "cert" }}{{ $s.data | default "none" }}|{{ (lookup "v1" "Secret" "ns" "gone") | len }}"#;
        let render = |env: FuncEnv| {
            let mut set = Templates::with_funcs(FuncMap::helm_shared(&Rc::new(env)));
            set.parse("t", text).expect("parses");
            set.execute("t", &Value::Nil)
        };
        assert_eq!(render(FuncEnv::system()).expect("offline"), "none|0");
        let cluster = FuncEnv::system().with_lookup(Rc::new(|q: &LookupRequest<'_>| {
            match (q.api_version, q.kind, q.namespace, q.name) {
                ("v1", "Secret", "ns", "cert") => Ok(Some(serde_json::json!({"data": {"k": "dg=="}}))),
                _ => Ok(None),
            }
        }));
        assert_eq!(render(cluster).expect("with a cluster"), "map[k:dg==]|0");
        let broken =
            FuncEnv::system().with_lookup(Rc::new(|_: &LookupRequest<'_>| Err("connection refused".into())));
        let err = render(broken).expect_err("a failed lookup fails the render");
        assert!(err.to_string().contains("connection refused"), "{err}");
    }
}
