//! Helm's own template functions on top of sprig: `include`, `tpl`, `required`, `fail`,
//! `lookup` (offline: always an empty map; answered from a cluster when the [`FuncEnv`] has a
//! lookup) and `getHostByName` (no DNS: always "").

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::error::{FuncError, HELM_WARN_END, HELM_WARN_START};
use crate::funcs::{Func, FuncMap, arg_str};
use crate::funcs::{FuncEnv, LookupRequest};
use capstan_go::value::{GoType, Value};

/// Registers Helm's functions into `map`.
pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    use GoType::{Any, String};
    map.insert(
        "include",
        Func::new(&[String, Any], |ctx, args| {
            ctx.include(arg_str(&args[0]), args[1].clone())
                .map(Value::from_go_bytes)
        }),
    );
    map.insert(
        "tpl",
        Func::new(&[String, Any], |ctx, args| {
            ctx.tpl(arg_str(&args[0]), args[1].clone())
                .map(Value::from_go_bytes)
        }),
    );
    map.insert(
        "required",
        Func::pure(&[String, Any], |args| match &args[1] {
            Value::Nil => Err(warning(arg_str(&args[0]))),
            Value::String(s) if s.is_empty() => Err(warning(arg_str(&args[0]))),
            v => Ok(v.clone()),
        }),
    );
    map.insert(
        "fail",
        Func::pure(&[String], |args| Err(warning(arg_str(&args[0])))),
    );
    let env = Rc::clone(env);
    map.insert(
        "lookup",
        Func::pure(&[String, String, String, String], move |args| {
            let Some(lookup) = env.lookup() else {
                return Ok(Value::map(BTreeMap::new()));
            };
            let request = LookupRequest {
                api_version: arg_str(&args[0]),
                kind: arg_str(&args[1]),
                namespace: arg_str(&args[2]),
                name: arg_str(&args[3]),
            };
            match lookup(&request) {
                // Helm's lookup decodes the object as JSON into `map[string]interface{}`.
                Ok(Some(found)) => Ok(Value::from_json(&found)),
                Ok(None) => Ok(Value::map(BTreeMap::new())),
                Err(err) => Err(FuncError::msg(err)),
            }
        }),
    );
    map.insert("getHostByName", Func::pure(&[String], |_| Ok(Value::from(""))));
}

/// A `fail`/`required` message, marked the way Helm finds it again when it reports the error.
fn warning(msg: &str) -> FuncError {
    FuncError::msg(format!("{HELM_WARN_START}{msg}{HELM_WARN_END}"))
}

/// Helm's `toYaml`: the YAML of `v` without its final newline; "" when it cannot be encoded.
pub fn to_yaml_trimmed(v: &Value) -> String {
    match capstan_encoding::yaml_emit::marshal(v) {
        Ok(text) => text.strip_suffix('\n').unwrap_or(&text).to_string(),
        Err(_) => String::new(),
    }
}
