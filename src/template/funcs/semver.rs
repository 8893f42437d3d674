//! Sprig v3.3.0 functions: `semver` (a `*semver.Version` object with Masterminds' fields and
//! methods) and `semverCompare`. The constraint engine is reusable: [`constraint_matches`].

pub mod constraint;
pub mod version;

use std::any::Any;
use std::rc::Rc;

pub use constraint::{Constraints, constraint_matches};
pub use version::Version;

use crate::go::value::{GoType, Method, Object, Value};
use crate::template::error::FuncError;
use crate::template::funcs::{Func, FuncEnv, FuncMap, arg_str};

const VERSION_PTR: &str = "*semver.Version";

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    let _ = env;
    use GoType::String;
    map.insert(
        "semver",
        Func::pure(&[String], |a| {
            Version::parse(arg_str(&a[0]))
                .map(|v| version_value(v, true))
                .map_err(FuncError::msg)
        }),
    );
    map.insert(
        "semverCompare",
        Func::pure(&[String, String], |a| {
            constraint_matches(arg_str(&a[0]), arg_str(&a[1]))
                .map(Value::Bool)
                .map_err(FuncError::msg)
        }),
    );
}

/// A version as a template value: `*semver.Version` (what `semver` returns) or the plain
/// `semver.Version` struct (what `IncPatch` and friends return).
pub fn version_value(v: Version, pointer: bool) -> Value {
    Value::Object(Rc::new(VersionObject { v, pointer }))
}

struct VersionObject {
    v: Version,
    pointer: bool,
}

/// The version inside an argument declared `*semver.Version`; Go would dereference nil.
fn other_version(arg: &Value) -> Result<Version, FuncError> {
    match arg {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<VersionObject>()
            .map(|o| o.v.clone())
            .ok_or_else(|| FuncError::msg("wrong type for value; expected *semver.Version")),
        _ => Err(FuncError::msg(
            "runtime error: invalid memory address or nil pointer dereference",
        )),
    }
}

impl Object for VersionObject {
    /// Every field of a semver version is unexported: a deep copy is the zero version.
    fn deep_copy(&self) -> Option<Value> {
        Some(version_value(Version::default(), self.pointer))
    }

    fn type_name(&self) -> String {
        if self.pointer {
            VERSION_PTR
        } else {
            "semver.Version"
        }
        .into()
    }

    fn kind(&self) -> &'static str {
        if self.pointer { "ptr" } else { "struct" }
    }

    fn field(&self, name: &str) -> Option<Value> {
        let v = &self.v;
        Some(match name {
            "Major" => Value::Uint64(v.major),
            "Minor" => Value::Uint64(v.minor),
            "Patch" => Value::Uint64(v.patch),
            "Prerelease" => Value::from(v.pre.as_str()),
            "Metadata" => Value::from(v.metadata.as_str()),
            // Pointer-receiver methods are not in a plain struct's method set.
            "Original" if self.pointer => Value::from(v.original.as_str()),
            "String" => Value::from(v.render()),
            "IncPatch" => version_value(v.inc_patch(), false),
            "IncMinor" => version_value(v.inc_minor(), false),
            "IncMajor" => version_value(v.inc_major(), false),
            _ => return None,
        })
    }

    fn method(&self, name: &str) -> Option<Method> {
        let v = self.v.clone();
        let pointer_only = matches!(
            name,
            "Compare" | "LessThan" | "LessThanEqual" | "GreaterThan" | "GreaterThanEqual" | "Equal"
        );
        if pointer_only && !self.pointer {
            return None;
        }
        let compare = move |f: fn(std::cmp::Ordering) -> Value| {
            let v = v.clone();
            Method::new(&[GoType::Named(VERSION_PTR)], move |a| {
                let other = other_version(&a[0]).map_err(|e| e.to_string())?;
                Ok(f(v.compare(&other)))
            })
        };
        Some(match name {
            "Compare" => compare(|o| Value::Int(o as i64)),
            "LessThan" => compare(|o| Value::Bool(o.is_lt())),
            "LessThanEqual" => compare(|o| Value::Bool(o.is_le())),
            "GreaterThan" => compare(|o| Value::Bool(o.is_gt())),
            "GreaterThanEqual" => compare(|o| Value::Bool(o.is_ge())),
            "Equal" => compare(|o| Value::Bool(o.is_eq())),
            "SetPrerelease" => {
                let v = self.v.clone();
                Method::new(&[GoType::String], move |a| {
                    let pre = arg_str(&a[0]);
                    if !pre.is_empty() {
                        version::validate_prerelease(pre).map_err(|e| e.to_string())?;
                    }
                    let next = Version {
                        pre: pre.to_string(),
                        ..v.clone()
                    };
                    Ok(version_value(next.with_new_original(), false))
                })
            }
            "SetMetadata" => {
                let v = self.v.clone();
                Method::new(&[GoType::String], move |a| {
                    let meta = arg_str(&a[0]);
                    if !meta.is_empty() {
                        version::validate_metadata(meta).map_err(|e| e.to_string())?;
                    }
                    let next = Version {
                        metadata: meta.to_string(),
                        ..v.clone()
                    };
                    Ok(version_value(next.with_new_original(), false))
                })
            }
            _ => return None,
        })
    }

    fn format(&self) -> String {
        self.v.render()
    }

    fn stringer(&self) -> Option<String> {
        Some(self.v.render())
    }

    /// `MarshalJSON` writes the version string.
    fn to_data(&self) -> Value {
        Value::from(self.v.render())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
