//! Parse and execute a 2,000-line template: the engine's core cost, without Helm functions
//! beyond the builtins and `include`.

// Benchmarks may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;

use capstan_template::{FuncMap, MissingKey, Templates, Value};
use criterion::{Criterion, criterion_group, criterion_main};

/// A chart-like template: defines, includes, ranges over maps and lists, conditionals,
/// printf and comparisons (builtins only) — 2,000 lines in all.
fn big_template() -> String {
    let mut t = String::new();
    t.push_str("{{- define \"labels\" -}}\napp: {{ .Values.name }}\n    release: {{ $.rel }}\n{{- end -}}\n");
    let mut lines = 3;
    let mut i = 0;
    while lines < 2000 {
        t.push_str(&format!(
            "kind: ConfigMap # {i}\nmetadata:\n  name: {{{{ printf \"%s-%d\" .Values.name {i} }}}}\n  labels:\n    {{{{- include \"labels\" $ | printf \"%s\" }}}}\ndata:\n{{{{- range $k, $v := .Values.data }}}}\n  {{{{ $k }}}}: {{{{ if and $v (ne $k \"skip\") }}}}{{{{ $v | print }}}}{{{{ else }}}}none{{{{ end }}}}\n{{{{- end }}}}\n{{{{- range $i, $e := .Values.list }}}}{{{{ if lt $i 3 }}}}\n  item{{{{ $i }}}}: {{{{ index $.Values.list $i }}}}{{{{ end }}}}{{{{ end }}}}\n---\n"
        ));
        lines += 12;
        i += 1;
    }
    t
}

fn values() -> Value {
    let json = serde_json::json!({
        "name": "bench",
        "data": {"a": "1", "b": 2, "c": true, "skip": "x", "d": [1, 2], "e": {"f": "g"}},
        "list": ["x", "y", "z", "w"]
    });
    Value::map(
        [
            ("Values".to_string(), Value::from_json(&json).into_values()),
            ("rel".to_string(), Value::from("r")),
        ]
        .into_iter()
        .collect(),
    )
}

fn funcs() -> FuncMap {
    FuncMap::helm()
}

fn bench(c: &mut Criterion) {
    let text = big_template();
    let data = values();
    c.bench_function("parse 2000-line template", |b| {
        b.iter(|| {
            let mut set = Templates::new(funcs());
            set.parse("t.yaml", black_box(&text)).expect("parses");
            set
        })
    });
    let mut set = Templates::new(funcs());
    set.set_missing_key(MissingKey::Zero);
    set.parse("t.yaml", &text).expect("parses");
    c.bench_function("execute 2000-line template", |b| {
        b.iter(|| set.execute("t.yaml", black_box(&data)).expect("executes"))
    });
}

/// A chart-sized set (600 defines, like a bitnami chart with its subcharts and `common`)
/// whose template calls `tpl` 300 times, as `common.tplvalues.render` does: measures what
/// one `tpl` call costs beyond parsing its own short text.
fn tpl_set() -> (Templates, Value) {
    let mut set = Templates::new(funcs());
    set.set_missing_key(MissingKey::Zero);
    let mut defines = String::new();
    for i in 0..600 {
        defines.push_str(&format!(
            "{{{{- define \"lib.helper{i}\" -}}}}{{{{ .Values.name }}}}-{i}{{{{- end -}}}}\n"
        ));
    }
    set.parse("_helpers.tpl", &defines).expect("parses");
    let mut t = String::new();
    for i in 0..300 {
        t.push_str(&format!("v{i}: {{{{ tpl .Values.tplText $ }}}}\n"));
    }
    set.parse("t.yaml", &t).expect("parses");
    let json = serde_json::json!({"name": "bench", "tplText": "{{ .Values.name }}-x"});
    let data = Value::map(
        [("Values".to_string(), Value::from_json(&json).into_values())]
            .into_iter()
            .collect(),
    );
    (set, data)
}

fn bench_tpl(c: &mut Criterion) {
    let (set, data) = tpl_set();
    c.bench_function("execute 300 tpl calls in a 600-define set", |b| {
        b.iter(|| set.execute("t.yaml", black_box(&data)).expect("executes"))
    });
}

criterion_group!(benches, bench, bench_tpl);
criterion_main!(benches);
