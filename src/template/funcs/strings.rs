//! Sprig v3.3.0 functions: strings.

use std::rc::Rc;

use crate::template::funcs::{FuncEnv, FuncMap};

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    let _ = (map, env);
}
