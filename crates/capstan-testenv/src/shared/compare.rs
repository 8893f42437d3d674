//! Comparing rendered output with Helm's: byte-exact with a readable first difference, or
//! structurally for templates Helm renders non-deterministically.

use capstan_chart::{manifest, values};
use capstan_template::Value;

/// The first differing line of two outputs.
pub fn first_difference(want: &str, have: &str) -> String {
    for (i, (w, h)) in want.lines().zip(have.lines()).enumerate() {
        if w != h {
            return format!("line {}: want {w:?}, got {h:?}", i + 1);
        }
    }
    format!(
        "length differs: want {} lines, got {}",
        want.lines().count(),
        have.lines().count()
    )
}

/// Same documents and structure; strings may differ (generated secrets, timestamps).
pub fn structurally_equal(want: &str, have: &str) -> Result<(), String> {
    let (w, h) = (manifest::split_documents(want), manifest::split_documents(have));
    if w.len() != h.len() {
        return Err(format!("{} documents vs {}", w.len(), h.len()));
    }
    for (a, b) in w.iter().zip(h.iter()) {
        let va = values::parse_document(a).map_err(|e| format!("Helm's YAML: {e}"))?;
        let vb = values::parse_document(b).map_err(|e| format!("our YAML: {e}"))?;
        same_shape(&va, &vb, "")?;
    }
    Ok(())
}

fn same_shape(a: &Value, b: &Value, path: &str) -> Result<(), String> {
    match (a, b) {
        (Value::String(_), Value::String(_)) => Ok(()),
        (Value::Map(x), Value::Map(y)) => {
            let (x, y) = (x.snapshot(), y.snapshot());
            let kx: Vec<_> = x.iter().map(|(k, _)| k).collect();
            let ky: Vec<_> = y.iter().map(|(k, _)| k).collect();
            if kx != ky {
                return Err(format!("{path}: keys {kx:?} vs {ky:?}"));
            }
            for ((k, va), (_, vb)) in x.iter().zip(y.iter()) {
                same_shape(va, vb, &format!("{path}.{k}"))?;
            }
            Ok(())
        }
        (Value::List(x), Value::List(y)) => {
            if x.items.len() != y.items.len() {
                return Err(format!(
                    "{path}: list lengths {} vs {}",
                    x.items.len(),
                    y.items.len()
                ));
            }
            for (i, (va, vb)) in x.items.iter().zip(y.items.iter()).enumerate() {
                same_shape(va, vb, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        _ if a.deep_equal(b) => Ok(()),
        _ => Err(format!("{path}: {a:?} vs {b:?}")),
    }
}
