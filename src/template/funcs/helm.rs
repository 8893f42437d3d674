//! Helm's own template functions (`include`, …) on top of the builtins.

use crate::template::funcs::{Func, FuncMap};
use crate::template::value::{GoType, Value};

/// Registers Helm's functions into `map`.
pub fn register(map: &mut FuncMap) {
    map.insert(
        "include",
        Func::new(&[GoType::String, GoType::Any], |ctx, args| {
            let name = super::arg_str(&args[0]).to_string();
            let data = args.get(1).cloned().unwrap_or(Value::Nil);
            ctx.include(&name, data).map(Value::from)
        }),
    );
}
