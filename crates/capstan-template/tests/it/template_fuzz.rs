//! Property tests of the template engine on hostile input: parsing any text and executing any
//! template that parses must return (an output or an error) without panicking, overflowing
//! the stack or running away. Executions run under a small step budget, so a template that
//! recurses or loops forever ends with an error instead.
//!
//! `PROPTEST_CASES=100000 cargo test --release --test template_fuzz` fuzzes for longer.

use std::time::{Duration, Instant};

use capstan_template::{FuncMap, MissingKey, Templates, Value};
use proptest::prelude::*;

/// Budget per execution: plenty for the generated templates, small enough to stop runaways
/// quickly.
const STEP_BUDGET: u64 = 200_000;
/// A generous wall-clock bound per case, checked after the fact (debug builds are slow).
const MAX_CASE_TIME: Duration = Duration::from_secs(20);

fn data() -> Value {
    Value::from_json(&serde_json::json!({
        "Values": {"s": "str", "n": 1.5, "l": ["a", "b"], "m": {"k": "v"}, "t": true, "z": null},
        "list": [1, 2, 3],
    }))
}

/// Parses `text` as file `t.yaml` (plus a helper file), then executes it if it parsed;
/// returns whether it parsed.
fn render(text: &str, helper: &str) -> bool {
    let start = Instant::now();
    let mut set = Templates::new(FuncMap::helm());
    set.set_missing_key(MissingKey::Zero);
    set.set_step_budget(STEP_BUDGET);
    let helper_ok = set.parse("_helpers.tpl", helper).is_ok();
    let parsed = set.parse("t.yaml", text).is_ok();
    if parsed {
        let _ = set.execute("t.yaml", &data());
    }
    if helper_ok {
        let _ = set.execute("_helpers.tpl", &data());
    }
    assert!(start.elapsed() < MAX_CASE_TIME, "took {:?}", start.elapsed());
    parsed && helper_ok
}

/// Fragments that make up template source: delimiters, trim markers, keywords, operators,
/// literals of every kind (well- and ill-formed), names and plain text.
const FRAGMENTS: &[&str] = &[
    "{{",
    "}}",
    "{{- ",
    " -}}",
    "{{/*",
    "*/}}",
    "/*",
    "*/",
    " ",
    "\n",
    "\t",
    "-",
    "(",
    ")",
    "|",
    ",",
    ":=",
    "=",
    ":",
    "$",
    "$x",
    "$y",
    ".",
    ".a",
    ".Values",
    ".s",
    ".l",
    ".m",
    ".k",
    "if",
    "else",
    "end",
    "range",
    "with",
    "define",
    "template",
    "block",
    "break",
    "continue",
    "nil",
    "true",
    "false",
    "and",
    "or",
    "not",
    "len",
    "index",
    "print",
    "printf",
    "eq",
    "lt",
    "include",
    "tpl",
    "dict",
    "list",
    "\"x\"",
    "\"t.yaml\"",
    "\"d\"",
    "\"\\q\"",
    "\"",
    "`raw`",
    "`",
    "'a'",
    "'\\n'",
    "'",
    "0",
    "1",
    "-3",
    "1.5",
    "0x1F",
    "1e3",
    "0x1p-2",
    "1_0",
    "08",
    "1i",
    "1+2i",
    "99999999999999999999",
    "abc",
    "\u{2603}",
    "\u{1}",
    "}",
    "{",
    "@",
    "!",
    "#",
];

fn fragments() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..60).prop_map(|v| v.concat())
}

/// A well-formed template built from the grammar, with names drawn from a small pool so
/// defines, template calls and variables refer to each other (recursion included).
fn operand() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(".".to_string()),
        Just("$".to_string()),
        Just(".Values.s".to_string()),
        Just(".Values.l".to_string()),
        Just(".Values.m.k".to_string()),
        Just(".Values.missing".to_string()),
        Just(".list".to_string()),
        Just("\"str\"".to_string()),
        Just("1".to_string()),
        Just("-2".to_string()),
        Just("1.5".to_string()),
        Just("'c'".to_string()),
        Just("true".to_string()),
        Just("nil".to_string()),
    ]
}

fn pipeline() -> impl Strategy<Value = String> {
    let leaf = operand();
    leaf.prop_recursive(4, 16, 4, |inner| {
        prop_oneof![
            (
                prop::sample::select(
                    &[
                        "print", "len", "not", "and", "or", "eq", "index", "printf", "slice"
                    ][..]
                ),
                prop::collection::vec(inner.clone(), 0..3)
            )
                .prop_map(|(f, args)| format!("{f} {}", args.join(" "))),
            inner.clone().prop_map(|p| format!("({p})")),
            (
                inner.clone(),
                prop::sample::select(&["print", "len", "html", "urlquery"][..])
            )
                .prop_map(|(p, f)| format!("{p} | {f}")),
            inner.prop_map(|p| format!("(index {p}).x")),
        ]
    })
}

fn body() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("text\n".to_string()),
        pipeline().prop_map(|p| format!("{{{{ {p} }}}}")),
        pipeline().prop_map(|p| format!("{{{{- {p} -}}}}")),
        Just("{{/* c */}}".to_string()),
        Just("{{ template \"d\" . }}".to_string()),
        Just("{{ include \"d\" . }}".to_string()),
        Just("{{ tpl \"{{ . }}\" . }}".to_string()),
    ];
    leaf.prop_recursive(5, 40, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(|v| v.concat()),
            (pipeline(), inner.clone(), inner.clone())
                .prop_map(|(p, a, b)| format!("{{{{ if {p} }}}}{a}{{{{ else }}}}{b}{{{{ end }}}}")),
            (pipeline(), inner.clone())
                .prop_map(|(p, a)| format!("{{{{ with $w := {p} }}}}{a}{{{{ end }}}}")),
            (pipeline(), inner.clone()).prop_map(|(p, a)| {
                format!(
                    "{{{{ range $i, $v := {p} }}}}{a}{{{{ if $i }}}}{{{{ break }}}}{{{{ end }}}}{{{{ end }}}}"
                )
            }),
            (pipeline(), inner.clone()).prop_map(|(p, a)| format!("{{{{ $x := {p} }}}}{a}{{{{ $x = 1 }}}}")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn garbage_never_panics(text in fragments(), helper in fragments()) {
        render(&text, &helper);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        render(&text, "");
    }

    #[test]
    fn well_formed_templates_terminate(text in body(), helper in body()) {
        let parsed = render(&text, &format!("{{{{ define \"d\" }}}}{helper}{{{{ end }}}}"));
        prop_assert!(parsed, "generated template does not parse: {text:?} / {helper:?}");
    }
}

#[test]
fn self_including_template_stops() {
    render(
        "{{ include \"d\" . }}",
        "{{ define \"d\" }}{{ include \"d\" . }}{{ include \"d\" . }}{{ end }}",
    );
    render(
        "{{ template \"d\" . }}",
        "{{ define \"d\" }}{{ template \"d\" . }}{{ end }}",
    );
}

#[test]
fn deep_nesting_is_fine() {
    let n = 10_000;
    render(&format!("{{{{{}1{}}}}}", "(".repeat(n), ")".repeat(n)), "");
    render(
        &format!("{}x{}", "{{ if 1 }}".repeat(n), "{{ end }}".repeat(n)),
        "",
    );
    render(
        &format!("{}x{}", "{{ range 1 }}".repeat(n), "{{ end }}".repeat(n)),
        "",
    );
    render(&"{{ end }}".repeat(n), "");
    render(&"{{(".repeat(n), "");
}
