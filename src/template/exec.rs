//! The executor: walks parse trees over Go values (placeholder until implemented).

use std::collections::HashMap;
use std::rc::Rc;

use crate::template::ast::Tree;
use crate::template::error::{Error, ParseError};
use crate::template::funcs::FuncMap;
use crate::template::value::Value;

/// What a field lookup of a missing map key does (Go's `missingkey` option).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MissingKey {
    /// Go's default: the missing value prints as `<no value>`.
    #[default]
    Default,
    /// `missingkey=zero`: the zero value of the map's element type (Helm's default).
    Zero,
    /// `missingkey=error`: an execution error (Helm's `--strict`).
    Error,
}

/// A set of named templates sharing one define namespace and one function map.
#[derive(Clone)]
pub struct Templates {
    funcs: Rc<FuncMap>,
    trees: HashMap<String, Rc<Tree>>,
    missing_key: MissingKey,
}

impl Templates {
    pub fn new(funcs: FuncMap) -> Templates {
        Templates {
            funcs: Rc::new(funcs),
            trees: HashMap::new(),
            missing_key: MissingKey::Default,
        }
    }

    pub fn set_missing_key(&mut self, missing_key: MissingKey) {
        self.missing_key = missing_key;
    }

    /// Parses `text` as template `name`, adding its defines to the set.
    pub fn parse(&mut self, name: &str, text: &str) -> Result<(), ParseError> {
        let _ = (name, text);
        todo_parse()
    }

    /// Whether a template of that name exists.
    pub fn has(&self, name: &str) -> bool {
        self.trees.contains_key(name)
    }

    /// Executes template `name` with `data` as dot and `$`.
    pub fn execute(&self, name: &str, data: &Value) -> Result<String, Error> {
        let _ = (data, &self.funcs, self.missing_key);
        Err(Error::NoTemplate {
            name: name.to_string(),
            set: "gotpl".into(),
        })
    }
}

fn todo_parse() -> Result<(), ParseError> {
    Err(ParseError {
        name: String::new(),
        line: 0,
        msg: "not implemented".into(),
    })
}
