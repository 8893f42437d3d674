//! The executor: walks parse trees over Go values with text/template's semantics.
//!
//! Go's executor works on `reflect.Value`s, and two of its distinctions are visible in
//! Helm's output and errors, so they are modelled here as [`EVal`]:
//! - an *invalid* value (what a pipeline yields for nil) versus a nil `interface{}` (what a
//!   map lookup yields): `upper .Values.missing` and `upper $missing` fail differently, and
//!   `.Values.missing.x` errors while `$missing.x` does not;
//! - a value whose static type is `interface{}` (map and slice elements) versus a concrete one,
//!   which shows in `can't evaluate field x in type interface {}`.

// Names are looked up on every call and include; Fx hashing is several times cheaper than
// SipHash for such short keys (template names come from charts, not from the network).
use rustc_hash::FxHashMap as HashMap;
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;

use crate::ast::{Branch, Command, Expr, List, Node, Number, Pipe, TemplateCall, Tree, Variable};
use crate::error::{Error, ExecError, ExecErrorKind, FuncError, ParseError};
use crate::funcs::{CallContext, Func, FuncMap, Special};
use crate::parser;
use capstan_go::fmt as gofmt;
use capstan_go::value::cycles;
use capstan_go::value::{GoType, ListKind, Map, MapKind, Value, go_text};

/// Go's limit on nested `{{template}}` calls.
const MAX_EXEC_DEPTH: usize = 100_000;
/// Helm's limit on nested `include` calls of one name.
const MAX_INCLUDE_DEPTH: usize = 1000;
/// Nested `tpl` calls allowed. Helm has no limit (unbounded `tpl` recursion dies of a Go
/// stack overflow); each level here holds a copy of the template set, so memory must be
/// bounded by an error instead.
const MAX_TPL_DEPTH: usize = 200;
/// The name of the root template of a set; `tpl` parses its text under it, like Helm.
pub const ROOT_NAME: &str = "gotpl";
/// What an invalid value prints as; Helm removes it from every file's output.
pub const NO_VALUE: &str = "<no value>";
/// The most output one template execution may produce (real manifests are far smaller).
const MAX_OUTPUT_BYTES: usize = 256 << 20;
/// Stack kept free before growing onto the heap, and the size of each new segment.
const STACK_RED_ZONE: usize = 128 * 1024;
const STACK_SEGMENT: usize = 2 * 1024 * 1024;

/// What a field lookup of a missing map key does (Go's `missingkey` option).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MissingKey {
    /// Go's default: the missing value is invalid and prints as `<no value>`.
    #[default]
    Default,
    /// `missingkey=zero`: the zero value of the map's element type (Helm's default).
    Zero,
    /// `missingkey=error`: an execution error (Helm's `--strict`).
    Error,
}

/// Parsed templates by name: what a [`Templates`] set shares with its copies and, being
/// `Send + Sync`, with sets on other threads.
pub type TreeSet = HashMap<String, Arc<Tree>>;

/// A set's parsed templates together with the texts `tpl` parsed while executing it, for
/// sets on other threads ([`Templates::from_shared`]). `Send + Sync`.
#[derive(Clone)]
pub struct SharedTrees {
    trees: Arc<TreeSet>,
    tpl: Arc<TplCache>,
}

/// Texts `tpl` parsed: charts pass the same value templates to `tpl` on every render.
#[derive(Default)]
struct TplCache {
    parsed: std::sync::Mutex<HashMap<String, Arc<TplTrees>>>,
}

/// A `tpl` text's own tree and its defines.
struct TplTrees {
    main: Arc<Tree>,
    defines: Vec<Arc<Tree>>,
}

/// Texts differ between renders when values do; past this many the cache starts over.
const MAX_TPL_CACHED: usize = 4096;

impl TplCache {
    fn get(&self, text: &str) -> Option<Arc<TplTrees>> {
        let parsed = self.parsed.lock().unwrap_or_else(|p| p.into_inner());
        parsed.get(text).cloned()
    }

    fn insert(&self, text: &str, trees: Arc<TplTrees>) {
        let mut parsed = self.parsed.lock().unwrap_or_else(|p| p.into_inner());
        if parsed.len() >= MAX_TPL_CACHED {
            parsed.clear();
        }
        parsed.insert(text.to_string(), trees);
    }
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<SharedTrees>();
};

/// A set of named templates sharing one define namespace and one function map.
///
/// Parse once, execute many times; cloning is cheap (trees are shared).
#[derive(Clone)]
pub struct Templates {
    funcs: Rc<FuncMap>,
    /// The trees parsed while the set was not shared. Behind an `Rc` so that `tpl`, which
    /// works on a copy of the set, copies a pointer instead of every define of the chart.
    trees: Arc<TreeSet>,
    /// Trees added to a copy (by `tpl`), which shadow `trees`; small.
    added: HashMap<String, Arc<Tree>>,
    tpl: Arc<TplCache>,
    missing_key: MissingKey,
    step_budget: u64,
}

/// Default for [`Templates::set_step_budget`]: far above what real charts need (the largest
/// corpus chart takes well under a million steps), low enough to stop a runaway template
/// (self-including ranges grow exponentially) within seconds.
pub const DEFAULT_STEP_BUDGET: u64 = 100_000_000;

impl Templates {
    pub fn new(funcs: FuncMap) -> Templates {
        Templates::with_funcs(Rc::new(funcs))
    }

    /// A set over a shared function map (see [`FuncMap::helm_shared`]).
    pub fn with_funcs(funcs: Rc<FuncMap>) -> Templates {
        Templates {
            funcs,
            trees: Arc::new(HashMap::default()),
            added: HashMap::default(),
            tpl: Arc::default(),
            missing_key: MissingKey::Default,
            step_budget: DEFAULT_STEP_BUDGET,
        }
    }

    /// A set over trees parsed before, possibly by another thread: the parse trees are
    /// immutable and `Send + Sync`, the function map is this thread's. The function map
    /// must know the same names as the one the trees were parsed with.
    pub fn from_shared(funcs: Rc<FuncMap>, shared: SharedTrees) -> Templates {
        Templates {
            trees: shared.trees,
            tpl: shared.tpl,
            ..Templates::with_funcs(funcs)
        }
    }

    /// The parsed trees of the set, to be shared with sets on other threads
    /// ([`Templates::from_shared`]). Trees added by `tpl` to a copy are not included.
    pub fn shared(&self) -> SharedTrees {
        SharedTrees {
            trees: Arc::clone(&self.trees),
            tpl: Arc::clone(&self.tpl),
        }
    }

    pub fn set_missing_key(&mut self, missing_key: MissingKey) {
        self.missing_key = missing_key;
    }

    /// Bounds the work of one `execute` (statements walked plus functions called), so no
    /// template can run forever. Go has no such bound; exhausting it is an execution error.
    pub fn set_step_budget(&mut self, steps: u64) {
        self.step_budget = steps;
    }

    pub fn missing_key(&self) -> MissingKey {
        self.missing_key
    }

    pub fn funcs(&self) -> &FuncMap {
        &self.funcs
    }

    /// Parses `text` as template `name`, adding it and its defines to the set. Like Go, a
    /// later definition replaces an earlier one unless it is empty.
    pub fn parse(&mut self, name: &str, text: &str) -> Result<(), ParseError> {
        self.parse_returning_main(name, text).map(drop)
    }

    /// [`Templates::parse`], also returning the file's own tree (whether or not it was
    /// added to the set).
    fn parse_returning_main(&mut self, name: &str, text: &str) -> Result<Arc<Tree>, ParseError> {
        let funcs = Rc::clone(&self.funcs);
        let parsed = parser::parse(name, text, &|f| funcs.contains(f))?;
        let main = Arc::new(parsed.main);
        self.add_tree(Arc::clone(&main));
        for tree in parsed.defines {
            self.add_tree(Arc::new(tree));
        }
        Ok(main)
    }

    /// [`Templates::parse_returning_main`] for `tpl`: texts with actions are parsed once
    /// and kept in the cache the set shares (plain texts are cheaper to parse than to keep).
    fn parse_tpl(&mut self, text: &str) -> Result<Arc<Tree>, ParseError> {
        if !text.contains("{{") {
            return self.parse_returning_main(ROOT_NAME, text);
        }
        let parsed = match self.tpl.get(text) {
            Some(parsed) => parsed,
            None => {
                let funcs = Rc::clone(&self.funcs);
                let file = parser::parse(ROOT_NAME, text, &|f| funcs.contains(f))?;
                let parsed = Arc::new(TplTrees {
                    main: Arc::new(file.main),
                    defines: file.defines.into_iter().map(Arc::new).collect(),
                });
                self.tpl.insert(text, Arc::clone(&parsed));
                parsed
            }
        };
        self.add_tree(Arc::clone(&parsed.main));
        for tree in &parsed.defines {
            self.add_tree(Arc::clone(tree));
        }
        Ok(Arc::clone(&parsed.main))
    }

    fn add_tree(&mut self, tree: Arc<Tree>) {
        if tree.is_empty() && self.has(&tree.name) {
            return;
        }
        match Arc::get_mut(&mut self.trees) {
            // Not shared with a copy: add in place (every parse before execution).
            Some(trees) => {
                self.added.remove(&tree.name);
                trees.insert(tree.name.clone(), tree);
            }
            None => {
                self.added.insert(tree.name.clone(), tree);
            }
        }
    }

    /// The template of that name.
    fn tree(&self, name: &str) -> Option<&Arc<Tree>> {
        self.added.get(name).or_else(|| self.trees.get(name))
    }

    /// Whether a template of that name exists.
    pub fn has(&self, name: &str) -> bool {
        self.tree(name).is_some()
    }

    /// Executes template `name` with `data` as dot and `$`.
    pub fn execute(&self, name: &str, data: &Value) -> Result<String, Error> {
        let Some(tree) = self.tree(name) else {
            return Err(Error::NoTemplate {
                name: name.to_string(),
                set: ROOT_NAME.into(),
            });
        };
        let mut shared = Shared::new(self.step_budget);
        let mut out = Vec::new();
        let collector = cycles::Collector::start();
        let result = State::new(self, tree, &mut shared, EVal::concrete(data.clone())).run(&mut out);
        // The execution's variables are gone now: reclaim the self-containing maps it made
        // that `data` cannot reach.
        collector.finish(&[data]);
        result.map_err(Error::Exec)?;
        // Go's output is bytes; byte strings printed by actions may leave invalid UTF-8,
        // which reads as one U+FFFD per invalid byte (as Helm's callers see it).
        Ok(go_text(out))
    }
}

/// Counters shared by all nested executions of one `execute` call.
struct Shared {
    includes: HashMap<String, usize>,
    /// Statements and calls still allowed before execution is stopped.
    steps_left: u64,
    /// `tpl` calls currently executing (see [`MAX_TPL_DEPTH`]).
    tpl_depth: usize,
}

impl Shared {
    fn new(budget: u64) -> Shared {
        Shared {
            includes: HashMap::default(),
            steps_left: budget,
            tpl_depth: 0,
        }
    }
}

/// A value as the executor holds it (see the module docs).
#[derive(Clone, Debug)]
struct EVal {
    v: Value,
    /// The static type is `interface{}` (the value came out of a map or slice element).
    iface: bool,
    /// Go can take the value's address: a field reached through a pointer (variables and
    /// `with` keep it so; function results and interface values are copies). Printing it
    /// uses a `String` method with a pointer receiver.
    addressable: bool,
}

impl EVal {
    /// A concrete value; `Value::Nil` here is Go's invalid value.
    fn concrete(v: Value) -> EVal {
        EVal {
            v,
            iface: false,
            addressable: false,
        }
    }

    fn invalid() -> EVal {
        EVal::concrete(Value::Nil)
    }

    fn is_invalid(&self) -> bool {
        self.v.is_nil() && !self.iface
    }

    /// Go's static type name, as in `can't evaluate field x in type T`.
    fn static_type(&self) -> String {
        if self.iface {
            "interface {}".to_string()
        } else {
            self.v.type_name()
        }
    }
}

/// Control flow out of a walk: `break`, `continue`, or an error.
enum Ctl {
    Break,
    Continue,
    Err(Box<ExecError>),
}

type R<T> = Result<T, Ctl>;

/// The node an error is reported at (Go's `state.at`).
#[derive(Clone, Copy)]
enum At<'a> {
    None,
    Node(&'a Node),
    Pipe(&'a Pipe),
    Cmd(&'a Command),
    Expr(&'a Expr),
    Var(&'a Variable),
}

impl At<'_> {
    fn pos(&self) -> Option<usize> {
        match self {
            At::None => None,
            At::Node(n) => Some(n.pos()),
            At::Pipe(p) => Some(p.pos),
            At::Cmd(c) => Some(c.pos),
            At::Expr(e) => Some(e.pos()),
            At::Var(v) => Some(v.pos),
        }
    }
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::None => Ok(()),
            At::Node(n) => write!(f, "{n}"),
            At::Pipe(p) => write!(f, "{p}"),
            At::Cmd(c) => write!(f, "{c}"),
            At::Expr(e) => write!(f, "{e}"),
            At::Var(v) => write!(f, "{v}"),
        }
    }
}

/// One template execution (Go's `state`).
struct State<'a, 's> {
    set: &'a Templates,
    tree: &'a Tree,
    shared: &'s mut Shared,
    vars: Vec<(&'a str, EVal)>,
    at: At<'a>,
    depth: usize,
    /// Whether the last argument evaluated was Go's invalid (zero) `reflect.Value` rather
    /// than a nil interface: only `len` tells them apart.
    arg_invalid: std::cell::Cell<bool>,
}

impl<'a, 's> State<'a, 's> {
    fn new(set: &'a Templates, tree: &'a Tree, shared: &'s mut Shared, dot: EVal) -> State<'a, 's> {
        State {
            set,
            tree,
            shared,
            vars: vec![("$", dot)],
            at: At::None,
            depth: 0,
            arg_invalid: std::cell::Cell::new(false),
        }
    }

    /// Executes the whole tree.
    fn run(&mut self, out: &mut Vec<u8>) -> Result<(), Box<ExecError>> {
        let dot = self.vars[0].1.clone();
        match self.walk_list(&dot, &self.tree.root, out) {
            Ok(()) => Ok(()),
            Err(Ctl::Err(e)) => Err(e),
            // The parser rejects break/continue outside range.
            Err(Ctl::Break | Ctl::Continue) => Ok(()),
        }
    }

    // ---- errors ----

    fn err(&self, kind: ExecErrorKind) -> Ctl {
        let (location, context) = match self.at.pos() {
            Some(pos) => (self.tree.location(pos), Some(self.at.to_string())),
            None => (self.tree.name.clone(), None),
        };
        Ctl::Err(Box::new(ExecError {
            location,
            name: self.tree.name.clone(),
            context,
            kind,
        }))
    }

    fn errorf(&self, msg: impl Into<String>) -> Ctl {
        self.err(ExecErrorKind::Message(msg.into()))
    }

    /// Counts one unit of work against the budget.
    fn spend(&mut self) -> R<()> {
        if self.shared.steps_left == 0 {
            return Err(
                self.errorf("template execution stopped: step budget exhausted (a runaway template?)")
            );
        }
        self.shared.steps_left -= 1;
        Ok(())
    }

    /// Stops templates whose output would exhaust memory.
    fn check_output(&self, out: &[u8]) -> R<()> {
        if out.len() > MAX_OUTPUT_BYTES {
            return Err(self.errorf(format!("template output exceeds {MAX_OUTPUT_BYTES} bytes")));
        }
        Ok(())
    }

    // ---- variables ----

    fn mark(&self) -> usize {
        self.vars.len()
    }

    fn pop(&mut self, mark: usize) {
        self.vars.truncate(mark);
    }

    fn push(&mut self, name: &'a str, value: EVal) {
        self.vars.push((name, value));
    }

    fn set_var(&mut self, name: &str, value: EVal) -> R<()> {
        match self.vars.iter_mut().rev().find(|(n, _)| *n == name) {
            Some(slot) => {
                slot.1 = value;
                Ok(())
            }
            None => Err(self.errorf(format!("undefined variable: {name}"))),
        }
    }

    fn set_top_var(&mut self, n: usize, value: EVal) {
        let len = self.vars.len();
        if n <= len {
            self.vars[len - n].1 = value;
        }
    }

    fn var_value(&self, name: &str) -> R<EVal> {
        match self.vars.iter().rev().find(|(n, _)| *n == name) {
            Some((_, v)) => Ok(v.clone()),
            None => Err(self.errorf(format!("undefined variable: {name}"))),
        }
    }

    // ---- statements ----

    fn walk_list(&mut self, dot: &EVal, list: &'a List, out: &mut Vec<u8>) -> R<()> {
        for node in &list.nodes {
            self.walk(dot, node, out)?;
        }
        Ok(())
    }

    fn walk(&mut self, dot: &EVal, node: &'a Node, out: &mut Vec<u8>) -> R<()> {
        self.at = At::Node(node);
        self.spend()?;
        match node {
            Node::Text(t) => {
                out.extend_from_slice(&t.text);
                self.check_output(out)
            }
            Node::Comment(_) => Ok(()),
            Node::Action(a) => {
                let val = self.eval_pipeline(dot, &a.pipe)?;
                if a.pipe.decl.is_empty() {
                    self.at = At::Node(node);
                    print_value(&val, out).map_err(|e| self.errorf(e.to_string()))?;
                }
                self.check_output(out)
            }
            Node::If(b) => self.walk_if_or_with(false, dot, b, out),
            Node::With(b) => self.walk_if_or_with(true, dot, b, out),
            Node::Range(b) => grow(|| self.walk_range(node, dot, b, out)),
            Node::Template(t) => grow(|| self.walk_template(node, dot, t, out)),
            Node::Break(_) => Err(Ctl::Break),
            Node::Continue(_) => Err(Ctl::Continue),
        }
    }

    fn walk_if_or_with(&mut self, is_with: bool, dot: &EVal, b: &'a Branch, out: &mut Vec<u8>) -> R<()> {
        let mark = self.mark();
        let result = grow(|| {
            let val = self.eval_pipeline(dot, &b.pipe)?;
            if val.v.truth() {
                let new_dot = if is_with { &val } else { dot };
                self.walk_list(new_dot, &b.list, out)
            } else if let Some(else_list) = &b.else_list {
                self.walk_list(dot, else_list, out)
            } else {
                Ok(())
            }
        });
        self.pop(mark);
        result
    }

    fn walk_range(&mut self, node: &'a Node, dot: &EVal, b: &'a Branch, out: &mut Vec<u8>) -> R<()> {
        self.at = At::Node(node);
        let outer = self.mark();
        let result = self.range_body(dot, b, out);
        self.pop(outer);
        result
    }

    fn range_body(&mut self, dot: &EVal, b: &'a Branch, out: &mut Vec<u8>) -> R<()> {
        let val = self.eval_pipeline(dot, &b.pipe)?;
        let mark = self.mark();
        let mut ran = false;
        match &val.v {
            Value::List(l) => {
                let elem_iface = matches!(l.kind, ListKind::Any | ListKind::AnyList);
                let items = Rc::clone(&l.items);
                for (i, item) in items.iter().enumerate() {
                    ran = true;
                    let elem = EVal {
                        v: item.clone(),
                        iface: elem_iface,
                        addressable: false,
                    };
                    if self.range_iteration(b, EVal::concrete(Value::Int(i as i64)), elem, mark, out)? {
                        break;
                    }
                }
            }
            Value::Bytes(bytes) => {
                let bytes = Rc::clone(bytes);
                for (i, byte) in bytes.iter().enumerate() {
                    ran = true;
                    let elem = EVal::concrete(Value::Uint8(*byte));
                    if self.range_iteration(b, EVal::concrete(Value::Int(i as i64)), elem, mark, out)? {
                        break;
                    }
                }
            }
            Value::Map(m) => {
                let elem_iface = m.kind != MapKind::String;
                for (k, v) in m.snapshot() {
                    ran = true;
                    let elem = EVal {
                        v,
                        iface: elem_iface,
                        addressable: false,
                    };
                    if self.range_iteration(b, EVal::concrete(Value::from(k)), elem, mark, out)? {
                        break;
                    }
                }
            }
            // A slice-typed object (`.Capabilities.APIVersions`) ranges over its elements.
            Value::Object(o) if o.kind() == "slice" && matches!(o.to_data(), Value::List(_)) => {
                if let Value::List(l) = o.to_data() {
                    for (i, item) in l.items.iter().enumerate() {
                        ran = true;
                        let (index, elem) =
                            (EVal::concrete(Value::Int(i as i64)), EVal::concrete(item.clone()));
                        if self.range_iteration(b, index, elem, mark, out)? {
                            break;
                        }
                    }
                }
            }
            Value::Object(o) if o.entries().is_some() => {
                for (k, v) in o.entries().unwrap_or_default() {
                    ran = true;
                    if self.range_iteration(
                        b,
                        EVal::concrete(Value::from(k)),
                        EVal::concrete(v),
                        mark,
                        out,
                    )? {
                        break;
                    }
                }
            }
            Value::Int(_) | Value::Int64(_) | Value::Uint8(_) | Value::Uint64(_) => {
                if b.pipe.decl.len() > 1 {
                    return Err(self.errorf(format!(
                        "can't use {} to iterate over more than one variable",
                        gofmt::format_value(&val.v)
                    )));
                }
                let (n, make): (i64, fn(i64) -> Value) = match val.v {
                    Value::Int(n) => (n, Value::Int),
                    Value::Int64(n) => (n, Value::Int64),
                    Value::Uint8(n) => (i64::from(n), |i| Value::Uint8(i as u8)),
                    // More iterations than an i64 counts could never finish anyway.
                    Value::Uint64(n) => (i64::try_from(n).unwrap_or(i64::MAX), |i| Value::Uint64(i as u64)),
                    _ => (0, Value::Int),
                };
                for i in 0..n.max(0) {
                    ran = true;
                    if self.range_iteration(b, EVal::invalid(), EVal::concrete(make(i)), mark, out)? {
                        break;
                    }
                }
            }
            Value::Nil => {}
            other => {
                return Err(self.errorf(format!("range can't iterate over {}", gofmt::format_value(other))));
            }
        }
        if !ran && let Some(else_list) = &b.else_list {
            self.walk_list(dot, else_list, out)?;
        }
        Ok(())
    }

    /// One iteration of a range body; returns true on `break`.
    fn range_iteration(
        &mut self,
        b: &'a Branch,
        index: EVal,
        elem: EVal,
        mark: usize,
        out: &mut Vec<u8>,
    ) -> R<bool> {
        let decl = &b.pipe.decl;
        if !decl.is_empty() {
            if b.pipe.is_assign {
                let first = if decl.len() > 1 {
                    index.clone()
                } else {
                    elem.clone()
                };
                self.set_var(&decl[0].names[0], first)?;
            } else {
                self.set_top_var(1, elem.clone());
            }
        }
        if decl.len() > 1 {
            if b.pipe.is_assign {
                self.set_var(&decl[1].names[0], elem.clone())?;
            } else {
                self.set_top_var(2, index);
            }
        }
        let result = self.walk_list(&elem, &b.list, out);
        self.pop(mark);
        match result {
            Ok(()) | Err(Ctl::Continue) => Ok(false),
            Err(Ctl::Break) => Ok(true),
            Err(e) => Err(e),
        }
    }

    fn walk_template(&mut self, node: &'a Node, dot: &EVal, t: &'a TemplateCall, out: &mut Vec<u8>) -> R<()> {
        self.at = At::Node(node);
        let Some(tree) = self.set.tree(&t.name) else {
            return Err(self.errorf(format!("template {} not defined", gofmt::quote(&t.name))));
        };
        if self.depth >= MAX_EXEC_DEPTH {
            return Err(self.errorf(format!("exceeded maximum template depth ({MAX_EXEC_DEPTH})")));
        }
        let new_dot = match &t.pipe {
            Some(p) => self.eval_pipeline(dot, p)?,
            None => EVal::invalid(),
        };
        let mut inner = State {
            set: self.set,
            tree,
            shared: &mut *self.shared,
            vars: vec![("$", new_dot.clone())],
            at: At::None,
            depth: self.depth + 1,
            arg_invalid: std::cell::Cell::new(false),
        };
        match inner.walk_list(&new_dot, &tree.root, out) {
            Err(Ctl::Err(e)) => Err(Ctl::Err(e)),
            _ => Ok(()),
        }
    }

    // ---- expressions ----

    fn eval_pipeline(&mut self, dot: &EVal, pipe: &'a Pipe) -> R<EVal> {
        self.at = At::Pipe(pipe);
        let mut value: Option<EVal> = None;
        for cmd in &pipe.cmds {
            let v = self.eval_command(dot, cmd, value.take())?;
            // Go unwraps interface values between stages: a nil interface becomes invalid,
            // and the value inside is a copy. Other values stay as they are (addressable).
            value = Some(if v.iface { EVal::concrete(v.v) } else { v });
        }
        let value = value.unwrap_or_else(EVal::invalid);
        for var in &pipe.decl {
            if pipe.is_assign {
                self.set_var(&var.names[0], value.clone())?;
            } else {
                self.push(&var.names[0], value.clone());
            }
        }
        Ok(value)
    }

    fn eval_command(&mut self, dot: &EVal, cmd: &'a Command, fin: Option<EVal>) -> R<EVal> {
        let Some(first) = cmd.args.first() else {
            return Err(self.errorf("empty command"));
        };
        match first {
            Expr::Field(_, names) => {
                self.at = At::Expr(first);
                self.eval_field_chain(dot, dot.clone(), At::Expr(first), names, &cmd.args, fin)
            }
            Expr::Chain { node, fields, .. } => self.eval_chain(dot, first, node, fields, &cmd.args, fin),
            Expr::Identifier(_, name) => self.eval_function(dot, first, name, At::Cmd(cmd), &cmd.args, fin),
            Expr::Pipe(p) => {
                self.not_a_function(&cmd.args, &fin)?;
                grow(|| self.eval_pipeline(dot, p))
            }
            Expr::Variable(v) => self.eval_variable(dot, v, &cmd.args, fin),
            _ => {
                self.at = At::Expr(first);
                self.not_a_function(&cmd.args, &fin)?;
                match first {
                    Expr::Bool(_, b) => Ok(EVal::concrete(Value::Bool(*b))),
                    Expr::Dot(_) => Ok(dot.clone()),
                    Expr::Nil(_) => Err(self.errorf("nil is not a command")),
                    Expr::Number(n) => self.ideal_constant(first, n),
                    Expr::String { value, .. } => Ok(EVal::concrete(value.to_value())),
                    _ => Err(self.errorf(format!(
                        "can't evaluate command {}",
                        gofmt::quote(&first.to_string())
                    ))),
                }
            }
        }
    }

    fn not_a_function(&self, args: &[Expr], fin: &Option<EVal>) -> R<()> {
        if args.len() > 1 || fin.is_some() {
            let first = args.first().map(|a| a.to_string()).unwrap_or_default();
            return Err(self.errorf(format!("can't give argument to non-function {first}")));
        }
        Ok(())
    }

    fn ideal_constant(&mut self, expr: &'a Expr, n: &Number) -> R<EVal> {
        self.at = At::Expr(expr);
        let text = n.text.as_str();
        let is_hex_int = text.len() > 2
            && text.starts_with('0')
            && matches!(text.as_bytes()[1], b'x' | b'X')
            && !text.contains(['p', 'P']);
        let is_rune = text.starts_with('\'');
        if let Some((re, im)) = n.complex {
            return Ok(EVal::concrete(Value::Object(Rc::new(Complex128 { re, im }))));
        }
        if let Some(f) = n.float
            && !is_hex_int
            && !is_rune
            && text.contains(['.', 'e', 'E', 'p', 'P'])
        {
            return Ok(EVal::concrete(Value::Float(f)));
        }
        if let Some(i) = n.int {
            return Ok(EVal::concrete(Value::Int(i)));
        }
        if n.uint.is_some() {
            return Err(self.errorf(format!("{text} overflows int")));
        }
        Ok(EVal::invalid())
    }

    fn eval_chain(
        &mut self,
        dot: &EVal,
        expr: &'a Expr,
        node: &'a Expr,
        fields: &'a [String],
        args: &'a [Expr],
        fin: Option<EVal>,
    ) -> R<EVal> {
        self.at = At::Expr(expr);
        if matches!(node, Expr::Nil(_)) {
            return Err(self.errorf(format!("indirection through explicit nil in {expr}")));
        }
        let receiver = grow(|| self.eval_arg_untyped(dot, node))?;
        self.eval_field_chain(dot, receiver, At::Expr(expr), fields, args, fin)
    }

    fn eval_variable(&mut self, dot: &EVal, v: &'a Variable, args: &'a [Expr], fin: Option<EVal>) -> R<EVal> {
        self.at = At::Var(v);
        let value = self.var_value(&v.names[0])?;
        if v.names.len() == 1 {
            self.not_a_function(args, &fin)?;
            return Ok(value);
        }
        self.eval_field_chain(dot, value, At::Var(v), &v.names[1..], args, fin)
    }

    fn eval_field_chain(
        &mut self,
        dot: &EVal,
        mut receiver: EVal,
        node: At<'a>,
        names: &'a [String],
        args: &'a [Expr],
        fin: Option<EVal>,
    ) -> R<EVal> {
        let Some((last, init)) = names.split_last() else {
            return Ok(receiver);
        };
        for name in init {
            receiver = self.eval_field(dot, name, node, &[], None, receiver)?;
        }
        self.eval_field(dot, last, node, args, fin, receiver)
    }

    /// `receiver.name`, with `args` (`args[0]` is the field itself) and a pipeline `fin`.
    fn eval_field(
        &mut self,
        dot: &EVal,
        name: &str,
        node: At<'a>,
        args: &'a [Expr],
        fin: Option<EVal>,
        receiver: EVal,
    ) -> R<EVal> {
        if receiver.is_invalid() {
            if self.set.missing_key == MissingKey::Error {
                return Err(self.errorf(format!("nil data; no entry for key {}", gofmt::quote(name))));
            }
            return Ok(EVal::invalid());
        }
        let has_args = args.len() > 1 || fin.is_some();
        match &receiver.v {
            Value::Nil => Err(self.errorf(format!(
                "nil pointer evaluating {}.{name}",
                receiver.static_type()
            ))),
            Value::Object(o) => {
                if let Some(method) = o.method(name) {
                    return self.eval_call(dot, &Func::from(method), name, node, args, fin);
                }
                let addressable = receiver.addressable && !receiver.iface;
                match o.field(name) {
                    Some(_) if o.pointer_receiver(name) && !addressable => Err(self.errorf(format!(
                        "can't evaluate field {name} in type {}",
                        receiver.static_type()
                    ))),
                    Some(v) if has_args => {
                        let _ = v;
                        Err(self.errorf(format!("{name} has arguments but cannot be invoked as function")))
                    }
                    // A field of a struct behind a pointer is addressable, and so are the
                    // fields of an addressable struct.
                    Some(v) => Ok(EVal {
                        v,
                        iface: false,
                        addressable: o.kind() == "ptr" || addressable,
                    }),
                    None => Err(self.errorf(format!(
                        "can't evaluate field {name} in type {}",
                        receiver.static_type()
                    ))),
                }
            }
            // Helm's `common.Values` has methods, and Go looks up methods before map keys:
            // `.Values.AsMap` is the same map as a plain `map[string]interface {}` (cilium's
            // `dig … .Values.AsMap`).
            Value::Map(m) if m.kind == MapKind::Values && name == "AsMap" && !has_args => {
                Ok(EVal::concrete(Value::Map(m.retyped(MapKind::Any))))
            }
            Value::Map(m) => {
                // Helm's named `common.Values` has methods, which win over keys.
                if m.kind == MapKind::Values
                    && let Some(method) = values_method(m, name)
                {
                    return self.eval_call(dot, &method, name, node, args, fin);
                }
                if has_args {
                    return Err(self.errorf(format!("{name} is not a method but has arguments")));
                }
                let elem_iface = m.kind != MapKind::String;
                match m.get(name) {
                    Some(v) => Ok(EVal {
                        v,
                        iface: elem_iface,
                        addressable: false,
                    }),
                    None => match self.set.missing_key {
                        MissingKey::Default => Ok(EVal::invalid()),
                        MissingKey::Zero => Ok(EVal {
                            v: m.zero_elem(),
                            iface: elem_iface,
                            addressable: false,
                        }),
                        MissingKey::Error => {
                            Err(self.errorf(format!("map has no entry for key {}", gofmt::quote(name))))
                        }
                    },
                }
            }
            _ => Err(self.errorf(format!(
                "can't evaluate field {name} in type {}",
                receiver.static_type()
            ))),
        }
    }

    fn eval_function(
        &mut self,
        dot: &EVal,
        ident: &'a Expr,
        name: &str,
        node: At<'a>,
        args: &'a [Expr],
        fin: Option<EVal>,
    ) -> R<EVal> {
        self.at = At::Expr(ident);
        let Some(func) = self.set.funcs.get(name) else {
            return Err(self.errorf(format!("{} is not a defined function", gofmt::quote(name))));
        };
        self.eval_call(dot, &func, name, node, args, fin)
    }

    /// Calls `func`; `args[0]` is the function's own node, the rest are its arguments.
    fn eval_call(
        &mut self,
        dot: &EVal,
        func: &Func,
        name: &str,
        node: At<'a>,
        args: &'a [Expr],
        fin: Option<EVal>,
    ) -> R<EVal> {
        let args = args.get(1..).unwrap_or(&[]);
        let num_in = args.len() + usize::from(fin.is_some());
        let num_fixed = func.params.len();
        if func.variadic.is_some() {
            if num_in < num_fixed {
                return Err(self.errorf(format!(
                    "wrong number of args for {name}: want at least {num_fixed} got {}",
                    args.len()
                )));
            }
        } else if num_in != num_fixed {
            return Err(self.errorf(format!(
                "wrong number of args for {name}: want {num_fixed} got {num_in}"
            )));
        }

        if let Some(special) = func.special {
            return self.eval_and_or(dot, special, args, fin);
        }

        self.spend()?;
        let mut argv = Vec::with_capacity(num_in);
        for (i, arg) in args.iter().enumerate() {
            argv.push(self.eval_arg(dot, func.param_type(i), arg)?);
        }
        if let Some(fin) = fin {
            let typ = func.param_type(num_in - 1);
            argv.push(self.validate_type(fin, typ)?);
        }
        // Go's `len` of an invalid value panics inside reflect (a nil interface is fine).
        if name == "len" && num_in == 1 && self.arg_invalid.get() {
            self.at = node;
            return Err(self.err(ExecErrorKind::Call {
                func: name.to_string(),
                cause: FuncError::msg("reflect: call of reflect.Value.Type on zero Value"),
            }));
        }
        func.prepare_args(&mut argv);
        match (func.imp)(self, &argv) {
            Ok(v) => {
                let iface = v.is_nil();
                Ok(EVal {
                    v,
                    iface,
                    addressable: false,
                })
            }
            Err(mut cause) => {
                // Go's `call` is told the callee's source text, which its error names.
                if name == "call"
                    && let (FuncError::Message(m), Some(callee)) = (&cause, args.first())
                    && let Some(typ) = m.strip_prefix("non-function of type ")
                {
                    cause = FuncError::msg(format!("non-function {callee} of type {typ}"));
                }
                self.at = node;
                Err(self.err(ExecErrorKind::Call {
                    func: name.to_string(),
                    cause,
                }))
            }
        }
    }

    /// `and`/`or`: evaluate operands left to right and stop at the deciding one.
    fn eval_and_or(&mut self, dot: &EVal, special: Special, args: &'a [Expr], fin: Option<EVal>) -> R<EVal> {
        let stop_on = special == Special::Or;
        let mut last = EVal::invalid();
        for arg in args {
            last = self.eval_and_or_operand(dot, arg)?;
            if last.v.truth() == stop_on {
                return Ok(last);
            }
        }
        if let Some(fin) = fin {
            last = EVal::concrete(self.validate_type(fin, GoType::Reflect)?);
        }
        Ok(last)
    }

    /// An operand of `and`/`or`: Go hands back the operand's own `reflect.Value`, so a field
    /// reached through a pointer stays addressable (`{{ or .x .Capabilities.KubeVersion }}`
    /// prints through its pointer-receiver `String`).
    fn eval_and_or_operand(&mut self, dot: &EVal, arg: &'a Expr) -> R<EVal> {
        let evaluated = match arg {
            Expr::Field(_, names) => {
                self.at = At::Expr(arg);
                Some(self.eval_field_chain(dot, dot.clone(), At::Expr(arg), names, &[], None)?)
            }
            Expr::Chain { node, fields, .. } => {
                self.at = At::Expr(arg);
                Some(self.eval_chain(dot, arg, node, fields, &[], None)?)
            }
            _ => None,
        };
        match evaluated {
            // An invalid operand stays invalid (Go's `evalArg` of a `reflect.Value`).
            Some(ev) => {
                self.arg_invalid.set(ev.is_invalid());
                Ok(ev)
            }
            None => Ok(EVal::concrete(self.eval_arg(dot, GoType::Reflect, arg)?)),
        }
    }

    /// Evaluates an argument for a parameter of type `typ` (Go's `evalArg`).
    fn eval_arg(&mut self, dot: &EVal, typ: GoType, arg: &'a Expr) -> R<Value> {
        self.at = At::Expr(arg);
        self.arg_invalid.set(false);
        match arg {
            Expr::Dot(_) => self.validate_type(dot.clone(), typ),
            Expr::Nil(_) => {
                self.arg_invalid.set(typ == GoType::Reflect);
                if typ.can_be_nil() || typ == GoType::Reflect {
                    Ok(Value::Nil)
                } else {
                    Err(self.errorf(format!("cannot assign nil to {}", typ.name())))
                }
            }
            Expr::Field(_, names) => {
                let v = self.eval_field_chain(dot, dot.clone(), At::Expr(arg), names, &[], None)?;
                self.validate_type(v, typ)
            }
            Expr::Variable(var) => {
                let v = self.eval_variable(dot, var, &[], None)?;
                self.validate_type(v, typ)
            }
            Expr::Pipe(p) => {
                let v = grow(|| self.eval_pipeline(dot, p))?;
                self.validate_type(v, typ)
            }
            Expr::Identifier(_, name) => {
                let v = self.eval_function(dot, arg, name, At::Expr(arg), std::slice::from_ref(arg), None)?;
                self.validate_type(v, typ)
            }
            Expr::Chain { node, fields, .. } => {
                let v = self.eval_chain(dot, arg, node, fields, &[], None)?;
                self.validate_type(v, typ)
            }
            Expr::Bool(_, b) => match typ {
                GoType::Bool | GoType::Any | GoType::Reflect => Ok(Value::Bool(*b)),
                _ => self.literal_mismatch(arg, typ),
            },
            Expr::String { value, .. } => match typ {
                GoType::String | GoType::Any | GoType::Reflect => Ok(value.to_value()),
                _ => self.literal_mismatch(arg, typ),
            },
            Expr::Number(n) => match typ {
                GoType::Any | GoType::Reflect => Ok(self.ideal_constant(arg, n)?.v),
                GoType::Int => n
                    .int
                    .map(Value::Int)
                    .ok_or_else(|| self.errorf(format!("expected integer; found {arg}"))),
                GoType::Int64 => n
                    .int
                    .map(Value::Int64)
                    .ok_or_else(|| self.errorf(format!("expected integer; found {arg}"))),
                GoType::Uint32 => n
                    .int
                    .filter(|i| u32::try_from(*i).is_ok())
                    .map(Value::Int)
                    .ok_or_else(|| self.errorf(format!("expected unsigned integer; found {arg}"))),
                GoType::Float64 => n
                    .float
                    .map(Value::Float)
                    .ok_or_else(|| self.errorf(format!("expected float; found {arg}"))),
                _ => self.literal_mismatch(arg, typ),
            },
        }
    }

    /// A literal that does not fit the parameter type.
    fn literal_mismatch(&self, arg: &Expr, typ: GoType) -> R<Value> {
        let msg = match typ {
            GoType::Bool => format!("expected bool; found {arg}"),
            GoType::String => format!("expected string; found {arg}"),
            GoType::Int | GoType::Int64 => format!("expected integer; found {arg}"),
            GoType::Uint32 => format!("expected unsigned integer; found {arg}"),
            GoType::Float64 => format!("expected float; found {arg}"),
            _ => format!("can't handle {arg} for arg of type {}", typ.name()),
        };
        Err(self.errorf(msg))
    }

    /// Go's `evalArg` with a nil type (the receiver of a chain).
    fn eval_arg_untyped(&mut self, dot: &EVal, arg: &'a Expr) -> R<EVal> {
        self.at = At::Expr(arg);
        match arg {
            Expr::Dot(_) => Ok(dot.clone()),
            Expr::Field(_, names) => self.eval_field_chain(dot, dot.clone(), At::Expr(arg), names, &[], None),
            Expr::Variable(var) => self.eval_variable(dot, var, &[], None),
            Expr::Pipe(p) => self.eval_pipeline(dot, p),
            Expr::Identifier(_, name) => {
                self.eval_function(dot, arg, name, At::Expr(arg), std::slice::from_ref(arg), None)
            }
            Expr::Chain { node, fields, .. } => self.eval_chain(dot, arg, node, fields, &[], None),
            _ => Err(self.errorf(format!("can't handle {arg} for arg of type <nil>"))),
        }
    }

    /// Go's `validateType`: checks assignability without converting numbers.
    fn validate_type(&self, val: EVal, typ: GoType) -> R<Value> {
        self.arg_invalid.set(val.is_invalid());
        if val.is_invalid() {
            if typ.can_be_nil() || typ == GoType::Reflect {
                return Ok(Value::Nil);
            }
            return Err(self.errorf(format!("invalid value; expected {}", typ.name())));
        }
        if typ.accepts(&val.v) {
            return Ok(val.v);
        }
        let got = if val.v.is_nil() {
            "interface {}".to_string()
        } else {
            val.v.type_name()
        };
        Err(self.errorf(format!(
            "wrong type for value; expected {}; got {got}",
            typ.name()
        )))
    }
}

impl CallContext for State<'_, '_> {
    fn include(&mut self, name: &str, data: Value) -> Result<Vec<u8>, FuncError> {
        let Some(tree) = self.set.tree(name) else {
            return Err(FuncError::NoTemplate {
                name: name.to_string(),
            });
        };
        let count = match self.shared.includes.get_mut(name) {
            Some(count) => count,
            None => self.shared.includes.entry(name.to_string()).or_insert(0),
        };
        if *count > MAX_INCLUDE_DEPTH {
            return Err(FuncError::msg(format!(
                "rendering template has a nested reference name: {name}: unable to execute template"
            )));
        }
        *count += 1;
        let mut out = Vec::new();
        let result =
            grow(|| State::new(self.set, tree, &mut *self.shared, EVal::concrete(data)).run(&mut out));
        if let Some(count) = self.shared.includes.get_mut(name) {
            *count -= 1;
        }
        result.map(|()| out).map_err(FuncError::Template)
    }

    fn tpl(&mut self, text: &str, data: Value) -> Result<Vec<u8>, FuncError> {
        let quoted = gofmt::quote(text);
        if self.shared.tpl_depth >= MAX_TPL_DEPTH {
            return Err(FuncError::msg(format!(
                "error during tpl function execution for {quoted}: tpl nested more than {MAX_TPL_DEPTH} levels deep"
            )));
        }
        let mut set = self.set.clone();
        let tree = set
            .parse_tpl(text)
            .map_err(|e| FuncError::msg(format!("cannot parse template {quoted}: {e}")))?;
        // Like Go, run the freshly parsed tree itself: an empty text that did not replace an
        // existing (outer tpl's) template of the same name still executes as empty.
        let mut out = Vec::new();
        self.shared.tpl_depth += 1;
        let result = grow(|| State::new(&set, &tree, &mut *self.shared, EVal::concrete(data)).run(&mut out));
        self.shared.tpl_depth -= 1;
        result
            .map_err(|e| FuncError::msg(format!("error during tpl function execution for {quoted}: {e}")))?;
        Ok(remove_no_value(out))
    }
}

/// Writes an action's value like Go's `printValue`: invalid values print `<no value>`.
fn print_value(val: &EVal, out: &mut Vec<u8>) -> Result<(), gofmt::CycleError> {
    match &val.v {
        Value::Nil => out.extend_from_slice(NO_VALUE.as_bytes()),
        Value::String(s) => out.extend_from_slice(s.as_bytes()),
        Value::ByteString(b) => out.extend_from_slice(b),
        v => out.extend_from_slice(&gofmt::try_format_action_value(v, val.addressable && !val.iface)?),
    }
    Ok(())
}

/// Go's `strings.ReplaceAll(out, "<no value>", "")` on output bytes.
fn remove_no_value(out: Vec<u8>) -> Vec<u8> {
    let needle = NO_VALUE.as_bytes();
    let mut kept = Vec::with_capacity(out.len());
    let mut done = 0;
    for start in memchr::memmem::find_iter(&out, needle) {
        kept.extend_from_slice(&out[done..start]);
        done = start + needle.len();
    }
    if done == 0 {
        return out;
    }
    kept.extend_from_slice(&out[done..]);
    kept
}

/// Runs `f` on a stack with room to spare, growing it on the heap when deep recursion
/// (nested templates, parentheses, ranges) would otherwise overflow it.
fn grow<T>(f: impl FnOnce() -> T) -> T {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, f)
}

/// The methods of Helm's `common.Values` (`AsMap`, `YAML`, `Table`, `PathValue`) bound to `m`.
fn values_method(m: &Map, name: &str) -> Option<Func> {
    let this = m.clone();
    let func = match name {
        "AsMap" => Func::pure(&[], move |_| Ok(Value::Map(this.retyped(MapKind::Any)))),
        "YAML" => Func::pure(&[], move |_| {
            capstan_encoding::yaml_emit::marshal(&Value::Map(this.clone()))
                .map(Value::from)
                .map_err(|e| FuncError::msg(e.to_string()))
        }),
        "Table" => Func::pure(&[GoType::String], move |a| {
            values_table(&this, a[0].as_str().unwrap_or_default()).map(Value::Map)
        }),
        "PathValue" => Func::pure(&[GoType::String], move |a| {
            let path = a[0].as_str().unwrap_or_default();
            if path.is_empty() {
                return Err(FuncError::msg("YAML path cannot be empty"));
            }
            let no_value = |k: &str| FuncError::msg(format!("{} is not a value", gofmt::quote(k)));
            let (parents, key) = match path.rsplit_once('.') {
                Some((parents, key)) => (Some(parents), key),
                None => (None, path),
            };
            let table = match parents {
                Some(p) => values_table(&this, p).map_err(|_| no_value(key))?,
                None => this.clone(),
            };
            match table.get(key) {
                Some(v) if !matches!(v, Value::Map(_)) => Ok(v),
                _ => Err(no_value(key)),
            }
        }),
        _ => return None,
    };
    Some(func)
}

/// `Values.Table("a.b")`: the nested table, or `"b" is not a table`.
fn values_table(root: &Map, path: &str) -> Result<Map, FuncError> {
    let mut table = root.clone();
    for key in path.split('.') {
        match table.get(key) {
            Some(Value::Map(next)) if next.kind != MapKind::String => {
                table = next.retyped(MapKind::Values);
            }
            _ => return Err(FuncError::msg(format!("{} is not a table", gofmt::quote(key)))),
        }
    }
    Ok(table)
}

/// A Go `complex128` (what an imaginary literal such as `1i` evaluates to). Templates can only
/// print it or pass it on, so it is an object rather than a number of the value model.
struct Complex128 {
    re: f64,
    im: f64,
}

impl capstan_go::value::Object for Complex128 {
    fn type_name(&self) -> String {
        "complex128".into()
    }
    fn kind(&self) -> &'static str {
        "complex128"
    }
    fn field(&self, _name: &str) -> Option<Value> {
        None
    }
    fn truth(&self) -> Option<bool> {
        Some(self.re != 0.0 || self.im != 0.0)
    }
    /// Go's `%v`: `(1+2i)`, both parts in `%g` form, the imaginary one always signed.
    fn format(&self) -> String {
        let re = gofmt::format_float(self.re, b'g', -1, 64);
        let im = gofmt::format_float(self.im, b'g', -1, 64);
        let sign = if im.starts_with(['-', '+']) { "" } else { "+" };
        format!("({re}{sign}{im}i)")
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
