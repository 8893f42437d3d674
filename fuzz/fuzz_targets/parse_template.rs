//! Parses arbitrary text as a template: must never panic (errors are fine).
#![no_main]

use capstan_template::{FuncMap, Templates};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let mut set = Templates::new(FuncMap::helm());
        let _ = set.parse("t.yaml", text);
    }
});
