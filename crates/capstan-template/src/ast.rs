//! Parse tree of Go's `text/template` language.
//!
//! Mirrors the node kinds of Go's `text/template/parse` package, because execution errors
//! quote nodes back as template source (`executing "x" at <.Values.a>`), so every node keeps
//! its byte offset in the source and prints itself exactly like Go's `String()` methods.

use std::fmt;
use std::sync::Arc;

use capstan_go::value::Value;

/// Byte offset of a node in its template's source text.
pub type Pos = usize;

/// A parsed template: one `define` body or one whole file.
#[derive(Debug, Clone)]
pub struct Tree {
    /// Name the template is executed by (`define` name or file name).
    pub name: String,
    /// Name used in error locations: the file the text was parsed from.
    pub parse_name: String,
    /// The full source text of the file (positions index into it).
    pub text: Arc<str>,
    pub root: List,
}

impl Tree {
    /// Go's `IsEmptyTree`: only whitespace text, comments and empty lists.
    pub fn is_empty(&self) -> bool {
        self.root.nodes.iter().all(|n| match n {
            // Go trims with `unicode.IsSpace`, which is Rust's White_Space property.
            Node::Text(t) => String::from_utf8_lossy(&t.text).chars().all(char::is_whitespace),
            Node::Comment(_) => true,
            _ => false,
        })
    }

    /// `file:line:col` of a position, as Go's `ErrorContext` computes it (col is the 0-based
    /// byte offset in the line; on the first line it is the offset itself).
    pub fn location(&self, pos: Pos) -> String {
        let pos = pos.min(self.text.len());
        let before = &self.text.as_bytes()[..pos];
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        let col = match before.iter().rposition(|&b| b == b'\n') {
            Some(nl) => pos - (nl + 1),
            None => pos,
        };
        format!("{}:{}:{}", self.parse_name, line, col)
    }
}

/// A sequence of nodes.
#[derive(Debug, Clone, Default)]
pub struct List {
    pub pos: Pos,
    pub nodes: Vec<Node>,
}

/// A statement-level node.
#[derive(Debug, Clone)]
pub enum Node {
    Text(Text),
    Action(Action),
    Comment(Comment),
    If(Branch),
    Range(Branch),
    With(Branch),
    Template(TemplateCall),
    Break(Pos),
    Continue(Pos),
}

impl Node {
    pub fn pos(&self) -> Pos {
        match self {
            Node::Text(t) => t.pos,
            Node::Action(a) => a.pos,
            Node::Comment(c) => c.pos,
            Node::If(b) | Node::Range(b) | Node::With(b) => b.pos,
            Node::Template(t) => t.pos,
            Node::Break(p) | Node::Continue(p) => *p,
        }
    }
}

/// Plain text between actions (after trim markers were applied).
#[derive(Debug, Clone)]
pub struct Text {
    pub pos: Pos,
    pub text: Arc<[u8]>,
}

/// `{{/* ... */}}`; kept so trees print back faithfully.
#[derive(Debug, Clone)]
pub struct Comment {
    pub pos: Pos,
    /// The comment including its `/*` and `*/` delimiters.
    pub text: String,
}

/// `{{ pipeline }}`.
#[derive(Debug, Clone)]
pub struct Action {
    pub pos: Pos,
    pub line: usize,
    pub pipe: Pipe,
}

/// `if`, `range` and `with`: a pipeline, a body and an optional `else` body.
///
/// `else if`/`else with` chains are represented as an else list holding a single nested
/// `If`/`With` node, exactly like Go's parser does.
#[derive(Debug, Clone)]
pub struct Branch {
    pub pos: Pos,
    pub line: usize,
    pub pipe: Pipe,
    pub list: List,
    pub else_list: Option<List>,
}

/// `{{template "name" pipeline}}` (also produced by `block`).
#[derive(Debug, Clone)]
pub struct TemplateCall {
    pub pos: Pos,
    pub line: usize,
    pub name: String,
    pub pipe: Option<Pipe>,
}

/// A pipeline with optional variable declaration or assignment: `$x := a | b`.
#[derive(Debug, Clone)]
pub struct Pipe {
    pub pos: Pos,
    pub line: usize,
    /// True for `$x = …` (assignment), false for `$x := …` (declaration).
    pub is_assign: bool,
    /// Declared or assigned variables (one, or two in `range $i, $v :=`).
    pub decl: Vec<Variable>,
    pub cmds: Vec<Command>,
}

/// One stage of a pipeline: a function/method/field and its arguments.
#[derive(Debug, Clone)]
pub struct Command {
    pub pos: Pos,
    pub args: Vec<Expr>,
}

/// The value of a string literal. Kept apart from [`Value`] (whose strings are `Rc`) so that
/// parse trees are `Send + Sync` and one compiled chart can be rendered from many threads.
#[derive(Debug, Clone)]
pub enum StrLit {
    Utf8(Arc<str>),
    /// Escapes that leave invalid UTF-8 (`"\xff"`): a Go string that is not valid UTF-8.
    Bytes(Arc<[u8]>),
}

impl StrLit {
    pub fn from_go_bytes(bytes: Vec<u8>) -> StrLit {
        match String::from_utf8(bytes) {
            Ok(s) => StrLit::Utf8(s.into()),
            Err(e) => StrLit::Bytes(e.into_bytes().into()),
        }
    }

    pub fn to_value(&self) -> Value {
        match self {
            StrLit::Utf8(s) => Value::String(s.as_ref().into()),
            StrLit::Bytes(b) => Value::ByteString(b.as_ref().into()),
        }
    }
}

/// An operand.
#[derive(Debug, Clone)]
pub enum Expr {
    /// `.`
    Dot(Pos),
    /// `nil`
    Nil(Pos),
    Bool(Pos, bool),
    Number(Number),
    /// A string or raw string literal: `value` is the unquoted Go string (a byte string when
    /// `\x`/octal escapes leave invalid UTF-8), `quoted` the source form.
    String {
        pos: Pos,
        quoted: String,
        value: StrLit,
    },
    /// A function name.
    Identifier(Pos, String),
    /// `.a.b.c` (field names without dots).
    Field(Pos, Vec<String>),
    /// `$x.a.b`: `names[0]` is the variable name including `$`, then field names.
    Variable(Variable),
    /// `(pipeline)`.
    Pipe(Box<Pipe>),
    /// `(expr).a.b` or `$x.a`-like chains on a non-field operand.
    Chain {
        pos: Pos,
        node: Box<Expr>,
        fields: Vec<String>,
    },
}

impl Expr {
    pub fn pos(&self) -> Pos {
        match self {
            Expr::Dot(p) | Expr::Nil(p) | Expr::Bool(p, _) | Expr::Identifier(p, _) | Expr::Field(p, _) => *p,
            Expr::Number(n) => n.pos,
            Expr::String { pos, .. } | Expr::Chain { pos, .. } => *pos,
            Expr::Variable(v) => v.pos,
            Expr::Pipe(p) => p.pos,
        }
    }
}

/// A variable reference `$name.field…`; `names[0]` is `$` or `$name`.
#[derive(Debug, Clone)]
pub struct Variable {
    pub pos: Pos,
    pub names: Vec<String>,
}

/// A numeric literal with every Go interpretation that fits (like `parse.NumberNode`).
#[derive(Debug, Clone)]
pub struct Number {
    pub pos: Pos,
    /// Source text, printed back in errors.
    pub text: String,
    /// Set when the literal is an integer (`IsInt`), including char literals.
    pub int: Option<i64>,
    /// Set when the literal fits an unsigned integer (`IsUint`).
    pub uint: Option<u64>,
    /// Set when the literal is representable as a float (`IsFloat`).
    pub float: Option<f64>,
    /// Set for imaginary and complex literals (`1i`, `1+2i`): (real, imaginary).
    pub complex: Option<(f64, f64)>,
    /// True for char literals like `'a'`.
    pub is_char: bool,
}

// ---- deep trees ----
//
// Parenthesised pipelines nest up to 10000 deep and control structures without limit, so
// dropping and printing a tree must not recurse on the thread's own stack alone.

const STACK_RED_ZONE: usize = 64 * 1024;
const STACK_SEGMENT: usize = 1024 * 1024;

fn grow<T>(f: impl FnOnce() -> T) -> T {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, f)
}

impl Drop for Pipe {
    fn drop(&mut self) {
        let cmds = std::mem::take(&mut self.cmds);
        grow(|| drop(cmds));
    }
}

impl Drop for List {
    fn drop(&mut self) {
        let nodes = std::mem::take(&mut self.nodes);
        grow(|| drop(nodes));
    }
}

// ---- printing back as template source, like Go's Node.String() ----

impl fmt::Display for List {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        grow(|| {
            for n in &self.nodes {
                write!(f, "{n}")?;
            }
            Ok(())
        })
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Text(t) => write!(f, "{}", String::from_utf8_lossy(&t.text)),
            Node::Action(a) => write!(f, "{{{{{}}}}}", a.pipe),
            Node::Comment(c) => write!(f, "{{{{{}}}}}", c.text),
            Node::If(b) => write_branch(f, "if", b),
            Node::Range(b) => write_branch(f, "range", b),
            Node::With(b) => write_branch(f, "with", b),
            Node::Template(t) => match &t.pipe {
                None => write!(f, "{{{{template {}}}}}", go_quote(&t.name)),
                Some(p) => write!(f, "{{{{template {} {}}}}}", go_quote(&t.name), p),
            },
            Node::Break(_) => f.write_str("{{break}}"),
            Node::Continue(_) => f.write_str("{{continue}}"),
        }
    }
}

fn write_branch(f: &mut fmt::Formatter<'_>, name: &str, b: &Branch) -> fmt::Result {
    write!(f, "{{{{{name} {}}}}}{}", b.pipe, b.list)?;
    if let Some(e) = &b.else_list {
        write!(f, "{{{{else}}}}{e}")?;
    }
    f.write_str("{{end}}")
}

impl fmt::Display for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        grow(|| self.fmt_inner(f))
    }
}

impl Pipe {
    fn fmt_inner(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            for (i, v) in self.decl.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{v}")?;
            }
            f.write_str(if self.is_assign { " = " } else { " := " })?;
        }
        for (i, c) in self.cmds.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            match a {
                Expr::Pipe(p) => write!(f, "({p})")?,
                other => write!(f, "{other}")?,
            }
        }
        Ok(())
    }
}

impl fmt::Display for Variable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.names.join("."))
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Dot(_) => f.write_str("."),
            Expr::Nil(_) => f.write_str("nil"),
            Expr::Bool(_, b) => write!(f, "{b}"),
            Expr::Number(n) => f.write_str(&n.text),
            Expr::String { quoted, .. } => f.write_str(quoted),
            Expr::Identifier(_, name) => f.write_str(name),
            Expr::Field(_, names) => {
                for n in names {
                    write!(f, ".{n}")?;
                }
                Ok(())
            }
            Expr::Variable(v) => write!(f, "{v}"),
            Expr::Pipe(p) => write!(f, "{p}"),
            Expr::Chain { node, fields, .. } => {
                match node.as_ref() {
                    Expr::Pipe(p) => write!(f, "({p})")?,
                    other => write!(f, "{other}")?,
                }
                for n in fields {
                    write!(f, ".{n}")?;
                }
                Ok(())
            }
        }
    }
}

/// Go's `%q` of a string (`strconv.Quote`), used when printing template names.
pub fn go_quote(s: &str) -> String {
    capstan_go::fmt::quote(s)
}
