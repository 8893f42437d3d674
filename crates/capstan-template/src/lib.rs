//! A native implementation of Go's `text/template` with Go value semantics, as Helm v4.2.3
//! uses it. Knows nothing of Helm charts or Kubernetes: charts build on it in `capstan_chart`.
//!
//! - [`lexer`], [`parser`] → [`ast`]: the language.
//! - Values, printing and time come from [`capstan_go`], the layer below.
//! - [`exec`]: the executor; [`funcs`]: typed function registry and function families.
//! - [`Templates`]: parse a set of named templates once, execute them many times.

pub mod ast;
pub mod error;
pub mod exec;
pub mod funcs;
pub mod lexer;
pub mod parser;

pub use capstan_go::value::{GoType, Value};
pub use error::{Error, ExecError, FuncError, ParseError};
pub use exec::{MissingKey, Templates};
pub use funcs::{Func, FuncMap};

/// The README's example, compiled and run as a doc test so it stays true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
