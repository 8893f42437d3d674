//! Go text/template's builtin functions.

use crate::template::funcs::FuncMap;

pub fn register(map: &mut FuncMap) {
    let _ = map;
}
