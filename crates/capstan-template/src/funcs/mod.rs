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

mod registry;

pub use env::{FuncEnv, Lookup, LookupRequest};
#[cfg(test)]
pub use registry::NoContext;
pub use registry::{CallContext, Func, FuncImpl, FuncMap, Special, arg_bytes, arg_int, arg_str};

use std::rc::Rc;

/// The maps of whole families: built here, above the families, so that a family depends on the
/// registry and never on the file that gathers it.
impl FuncMap {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use capstan_go::value::{GoType, Value};

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
