use super::*;

fn json(text: &str) -> String {
    match load_document(text) {
        Ok(v) => show(&v),
        Err(e) => format!("ERR {e}"),
    }
}

/// A compact JSON-like rendering for assertions.
fn show(v: &Value) -> String {
    match v {
        Value::Nil => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Float(f) => format!("{f}"),
        Value::String(s) => format!("{s:?}"),
        Value::List(l) => format!("[{}]", l.items.iter().map(show).collect::<Vec<_>>().join(",")),
        Value::Map(m) => format!(
            "{{{}}}",
            m.entries
                .borrow()
                .iter()
                .map(|(k, v)| format!("{k:?}:{}", show(v)))
                .collect::<Vec<_>>()
                .join(",")
        ),
        other => format!("{other:?}"),
    }
}

#[test]
fn block_mapping_and_sequence() {
    assert_eq!(
        json("a: 1\nb:\n  - x\n  - z: 2\n"),
        r#"{"a":1,"b":["x",{"z":2}]}"#
    );
    assert_eq!(json("a:\n- 1\n- 2\nb: c\n"), r#"{"a":[1,2],"b":"c"}"#);
}

#[test]
fn flow_collections() {
    assert_eq!(json("a: {b: 1, c: [x, y]}"), r#"{"a":{"b":1,"c":["x",true]}}"#);
    assert_eq!(json("a: {b:c}"), r#"{"a":{"b:c":null}}"#);
    assert_eq!(json("a: [x:y, k: v]"), r#"{"a":["x:y",{"k":"v"}]}"#);
}

#[test]
fn scalars_styles() {
    assert_eq!(
        json("a: >\n  one\n  two\n\n  three\n    indented\n  four\nb: |+\n  keep\n\nc: |-\n  strip\n"),
        r#"{"a":"one two\nthree\n  indented\nfour\n","b":"keep\n\n","c":"strip"}"#
    );
    assert_eq!(
        json("e: \"multi\n  line   \n   quoted\""),
        r#"{"e":"multi line quoted"}"#
    );
    assert_eq!(json("f: 'it''s\n  \n  ok'"), r#"{"f":"it's\nok"}"#);
    assert_eq!(
        json("g: plain\n  continued\n    more"),
        r#"{"g":"plain continued more"}"#
    );
    assert_eq!(json("i: |2\n   two\n  one\n"), r#"{"i":" two\none\n"}"#);
    assert_eq!(json("k: \"a\\\n  b\""), r#"{"k":"ab"}"#);
}

#[test]
fn keys_become_strings() {
    assert_eq!(
        json("1: a\ntrue: b\n1.5: c\nyes: d\n0x10: f\n1e3: g\n3.14159265358979: h\n"),
        r#"{"1":"a","1.5":"c","1000":"g","16":"f","3.1415927":"h","true":"d"}"#
    );
    assert_eq!(
        json("~: e"),
        r#"ERR unsupported map key of type: %!s(<nil>), key: <nil>, value: "e""#
    );
    assert_eq!(
        json("[1, 2]: g"),
        "ERR yaml: invalid map key: []interface {}{1, 2}"
    );
}

#[test]
fn anchors_and_merges() {
    assert_eq!(
        json("base: &b {x: 1, q: 2}\no: {q: 3, <<: *b}\np: {<<: [{x: 1}, {x: 2, r: 1}]}\n"),
        r#"{"base":{"q":2,"x":1},"o":{"q":2,"x":1},"p":{"r":1,"x":1}}"#
    );
    assert_eq!(json("a: *x"), "ERR yaml: unknown anchor 'x' referenced");
    assert_eq!(
        json("a: &a [1, *a]"),
        "ERR yaml: anchor 'a' value contains itself"
    );
    assert_eq!(
        json("a: {<<: 1}"),
        "ERR yaml: map merge requires map or sequence of maps as the value"
    );
}

#[test]
fn billion_laughs_is_bounded() {
    let mut text = String::from("a: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\n");
    let names = ["a", "b", "c", "d", "e", "f", "g", "h"];
    for w in names.windows(2) {
        let refs = vec![format!("*{}", w[0]); 9].join(",");
        text.push_str(&format!("{}: &{} [{refs}]\n", w[1], w[1]));
    }
    assert_eq!(json(&text), "ERR yaml: document contains excessive aliasing");
}

#[test]
fn nesting_is_bounded() {
    // Dropping a 9000-deep value recurses; give the test the stack a main thread has.
    let worker = std::thread::Builder::new().stack_size(64 << 20).spawn(|| {
        let deep = format!("a: {}{}", "[".repeat(10001), "]".repeat(10001));
        assert_eq!(json(&deep), "ERR yaml: exceeded max depth of 10000");
        let ok = format!("a: {}{}", "[".repeat(9000), "]".repeat(9000));
        assert!(load_document(&ok).is_ok());
        let dashes = format!("a:\n{}x\n", "- ".repeat(10001));
        assert_eq!(json(&dashes), "ERR yaml: line 2: exceeded max depth of 10000");
        let mixed = format!(
            "a:\n{}{}{}\n",
            "- ".repeat(6000),
            "[".repeat(6000),
            "]".repeat(6000)
        );
        assert_eq!(
            load_document(&mixed).unwrap_err().sigs_message(),
            "error unmarshaling JSON: while decoding JSON: invalid character '[' exceeded max depth"
        );
    });
    assert!(worker.unwrap().join().is_ok());
}

#[test]
fn non_finite_floats_fail_in_json() {
    assert_eq!(json("a: .inf"), "ERR json: unsupported value: +Inf");
    assert_eq!(json("a: -.Inf"), "ERR json: unsupported value: -Inf");
    assert_eq!(json("a: .nan"), "ERR json: unsupported value: NaN");
}

#[test]
fn syntax_errors_have_go_text() {
    assert_eq!(
        json("a: b: c"),
        "ERR yaml: mapping values are not allowed in this context"
    );
    assert_eq!(
        json("a:\n  b: 1\n c: 2"),
        "ERR yaml: line 2: did not find expected key"
    );
    assert_eq!(
        json("a:\n\tb: 1"),
        "ERR yaml: line 2: found character that cannot start any token"
    );
    assert_eq!(
        json("a: {b: 1\n"),
        "ERR yaml: line 1: did not find expected ',' or '}'"
    );
    assert_eq!(
        json("a: \"abc\n"),
        "ERR yaml: line 2: found unexpected end of stream"
    );
    assert_eq!(
        json("a: 1\nb\nc: 2"),
        "ERR yaml: line 3: could not find expected ':'"
    );
    assert_eq!(json("a: \"\\q\""), "ERR yaml: found unknown escape character");
    assert_eq!(json("a: \u{1}"), "ERR yaml: control characters are not allowed");
}

#[test]
fn documents_split_like_kubernetes() {
    let docs: Vec<String> = split_documents("---\na: 1\n---\nb: 2\n--- # c\n\n---\n")
        .into_iter()
        .map(|d| d.unwrap())
        .collect();
    assert_eq!(docs, vec!["---\na: 1\n", "b: 2\n", "\n"]);
    // The reader fails on the bad line itself, dropping the document it was reading.
    let docs = split_documents("a: 1\n---\nc: 3\n--- b: 2\n");
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0].as_deref().ok(), Some("a: 1\n"));
    assert_eq!(
        docs[1].as_ref().unwrap_err().to_string(),
        "invalid Yaml document separator: b: 2"
    );
}

#[test]
fn typed_tree_keeps_go_types() {
    let node = parse_yaml("appVersion: 1.10\nv: 3\nbig: 18446744073709551615\n").unwrap();
    let YamlNode::Map(entries) = node else {
        panic!("not a map")
    };
    assert_eq!(entries[0].1, YamlNode::Float(1.1));
    assert_eq!(entries[0].1.go_string().as_deref(), Some("1.1"));
    assert_eq!(entries[1].1, YamlNode::Int(3));
    assert_eq!(entries[2].1, YamlNode::Uint(u64::MAX));
}

const HEAD_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The full load, cut down to the head fields afterwards: what the fields load must equal.
fn head_by_full_load(text: &str) -> String {
    match load_document(text) {
        Ok(Value::Map(m)) => {
            let kept = m
                .entries
                .borrow()
                .iter()
                .filter(|(k, _)| HEAD_FIELDS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            show(&Value::map(kept))
        }
        Ok(other) => show(&other),
        Err(e) => format!("ERR {e}"),
    }
}

fn head_by_fields_load(text: &str) -> String {
    match load_document_fields_with(&mut Scratch::default(), text, &HEAD_FIELDS) {
        Ok(v) => show(&v),
        Err(e) => format!("ERR {e}"),
    }
}

#[test]
fn fields_load_matches_the_full_load() {
    let cases = [
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations: {a: b}\ndata:\n  k: v\n",
        // Errors anywhere in the document are the full load's, built or not.
        "kind: A\nspec:\n  x: .inf\n",
        "kind: A\nspec:\n  - .nan\n",
        "kind: A\nspec:\n  ? [1, 2]\n  : b\n",
        "kind: A\nspec:\n  ? {a: 1}\n  : b\n",
        "kind: A\nspec:\n  ~: b\n",
        "kind: A\nspec:\n  18446744073709551615: b\n",
        "kind: A\nspec: *missing\n",
        "kind: A\nspec: [\n",
        // Keys that convert are fine anywhere; the same JSON key twice keeps the later value.
        "kind: A\nspec: {1: a, true: b, 1.5: c, .inf: d}\n",
        "1: a\n\"1\": b\nkind: x\nkind2: y\n",
        "kind: a\n\"kind\": b\n",
        "metadata: &m {name: n}\nother: *m\nkind: K\n",
        "<<: {kind: merged}\napiVersion: v\n",
        // Not a mapping: the full path.
        "- a\n- b\n",
        "just text\n",
        "",
        "kind: .inf\n",
    ];
    for text in cases {
        assert_eq!(head_by_fields_load(text), head_by_full_load(text), "{text:?}");
    }
}

#[test]
fn fields_load_checks_depth_like_the_full_load() {
    let worker = std::thread::Builder::new().stack_size(64 << 20).spawn(|| {
        for text in [
            format!(
                "kind: A\nspec:\n{}{}{}\n",
                "- ".repeat(6000),
                "[".repeat(6000),
                "]".repeat(6000)
            ),
            format!("kind: A\nspec: {}{}\n", "[".repeat(9000), "]".repeat(9000)),
        ] {
            assert_eq!(head_by_fields_load(&text), head_by_full_load(&text));
        }
    });
    assert!(worker.unwrap().join().is_ok());
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn fields_load_matches_the_full_load(
            text in r#"(kind|apiVersion|metadata|spec|[a-c1.~]{1,3}): ?[ \t\n\-:?,\[\]{}#&*!|>'"a-c0-9.~<]{0,40}\n(kind|metadata|x): ?[a-c0-9.~\[\]{}:, \n-]{0,30}"#
        ) {
            prop_assert_eq!(head_by_fields_load(&text), head_by_full_load(&text));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn never_panics(text in "[ \\t\\n\\-:?,\\[\\]{}#&*!|>'\"%@`a-c0-9.~<\\\\]{0,60}") {
            let _ = load_documents(&text);
            let _ = parse_yaml(&text);
        }

        #[test]
        fn never_panics_unicode(text in "\\PC{0,40}") {
            let _ = load_documents(&text);
        }
    }
}

#[test]
fn typed_values_keep_ints() {
    let node = parse_yaml("version: 12345678\napp: 1.10\nbig: .inf\nk: {1: x}\n").unwrap();
    let v = to_typed_value(&node).unwrap();
    let m = v.as_map().unwrap();
    assert!(matches!(m.get("version"), Some(Value::Int(12345678))));
    assert!(matches!(m.get("app"), Some(Value::Float(f)) if f == 1.1));
    assert!(matches!(m.get("big"), Some(Value::Float(f)) if f.is_infinite()));
    assert!(m.get("k").unwrap().as_map().unwrap().get("1").is_some());
}

#[test]
fn large_documents_load_in_linear_time() {
    // 100k keys and a 100k-item list: quadratic work here would take minutes.
    let mut text = String::new();
    for i in 0..100_000 {
        text.push_str(&format!("k{i}: {i}\n"));
    }
    text.push_str("list:\n");
    for i in 0..100_000 {
        text.push_str(&format!("- {{name: n{i}, v: {i}}}\n"));
    }
    let start = std::time::Instant::now();
    let v = load_document(&text).unwrap();
    assert_eq!(v.as_map().unwrap().len(), 100_001);
    assert!(start.elapsed().as_secs() < 60, "took {:?}", start.elapsed());
}
