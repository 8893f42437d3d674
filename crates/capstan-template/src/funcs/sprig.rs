//! The sprig v3.3.0 function map as Helm v4.2.3 exposes it (without `env`/`expandenv`:
//! templates must never read the renderer's environment, where credentials live).

use std::rc::Rc;

use crate::funcs::{
    FuncEnv, FuncMap, conversion, crypto, dates, defaults, dicts, encoding, lists, math, paths, random,
    reflection, regex, semver, strings, urls,
};

/// Registers every sprig function family into `map`.
pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    strings::register(map, env);
    lists::register(map, env);
    dicts::register(map, env);
    defaults::register(map, env);
    conversion::register(map, env);
    math::register(map, env);
    regex::register(map, env);
    semver::register(map, env);
    dates::register(map, env);
    crypto::register(map, env);
    encoding::register(map, env);
    paths::register(map, env);
    reflection::register(map, env);
    urls::register(map, env);
    random::register(map, env);
}
