//! Parses and executes arbitrary text under a small step budget: must never panic and must
//! always terminate.
#![no_main]

use capstan_template::{FuncMap, MissingKey, Templates, Value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut set = Templates::new(FuncMap::helm());
    set.set_missing_key(MissingKey::Zero);
    set.set_step_budget(100_000);
    if set.parse("t.yaml", text).is_ok() {
        let data = serde_json::json!({"Values": {"s": "str", "n": 1.5, "l": ["a", "b"], "m": {"k": "v"}}});
        let _ = set.execute("t.yaml", &Value::from_json(&data));
    }
});
