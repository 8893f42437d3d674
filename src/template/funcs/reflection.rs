//! Sprig v3.3.0 functions: reflection (`typeOf`, `typeIs`, `typeIsLike`, `kindOf`, `kindIs`,
//! `deepEqual`), answering with Go's type and kind names.

use std::rc::Rc;

use crate::template::funcs::{Func, FuncEnv, FuncMap, arg_str};
use crate::template::value::{GoType, Value};

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    let _ = env;
    use GoType::{Any, String};

    map.insert(
        "typeOf",
        Func::pure(&[Any], |a| Ok(Value::from(a[0].type_name()))),
    );
    map.insert(
        "kindOf",
        Func::pure(&[Any], |a| Ok(Value::from(a[0].kind_name()))),
    );
    map.insert(
        "typeIs",
        Func::pure(&[String, Any], |a| {
            Ok(Value::Bool(a[1].type_name() == arg_str(&a[0])))
        }),
    );
    map.insert(
        "typeIsLike",
        Func::pure(&[String, Any], |a| {
            // The type itself or a pointer to it.
            let (want, got) = (arg_str(&a[0]), a[1].type_name());
            Ok(Value::Bool(got == want || got.strip_prefix('*') == Some(want)))
        }),
    );
    map.insert(
        "kindIs",
        Func::pure(&[String, Any], |a| {
            Ok(Value::Bool(a[1].kind_name() == arg_str(&a[0])))
        }),
    );
    map.insert(
        "deepEqual",
        Func::pure(&[Any, Any], |a| Ok(Value::Bool(a[0].deep_equal(&a[1])))),
    );
}
