//! Parser for the text/template language: a recursive-descent parser over the lexer's tokens
//! that builds [`Tree`]s and reports errors exactly as Go's `text/template/parse` does.
//!
//! Go reports a parse error at the line of the most recently *lexed* token (its one- to
//! three-token look-ahead included), so this parser keeps every token it lexed in a buffer
//! and looks ahead and backs up the same way Go's does; the error line is the line of the
//! last token in the buffer.

mod literal;

use std::sync::Arc;

use crate::ast::{
    Action, Branch, Command, Expr, List, Node, Number, Pipe, TemplateCall, Text, Tree, Variable,
};
use crate::error::ParseError;
use crate::lexer::{Kind, Lexer, Token};
use capstan_go::fmt::quote;

/// Go's limit on nested parenthesised pipelines.
const MAX_PAREN_DEPTH: usize = 10_000;
/// Stack kept free before growing onto the heap (deeply nested `if`s and parentheses recurse).
const STACK_RED_ZONE: usize = 128 * 1024;
const STACK_SEGMENT: usize = 2 * 1024 * 1024;

/// The result of parsing one file: its own tree and the `define`/`block` bodies it declares.
#[derive(Debug)]
pub struct ParsedFile {
    /// The file's top-level tree, named `parse_name`.
    pub main: Tree,
    /// Trees declared with `define`/`block`, in source order.
    pub defines: Vec<Tree>,
}

/// Parses `text` (from file `parse_name`); `is_func` tells which function names exist.
pub fn parse(parse_name: &str, text: &str, is_func: &dyn Fn(&str) -> bool) -> Result<ParsedFile, ParseError> {
    let mut p = Parser {
        parse_name,
        source: Arc::from(text),
        lexer: Lexer::new(text),
        toks: Vec::new(),
        cur: 0,
        is_func,
        scope: Scope::new(),
        trees: Vec::new(),
    };
    let root = p.parse_file()?;
    let main = p.tree(parse_name.to_string(), root);
    // The file's own tree joins the set last: a define of the same name conflicts with it.
    if let Some(define) = p.trees.iter().find(|t| t.name == parse_name)
        && !define.is_empty()
        && !main.is_empty()
    {
        return Err(p.error(format!(
            "template: multiple definition of template {}",
            quote(parse_name)
        )));
    }
    Ok(ParsedFile {
        main,
        defines: p.trees,
    })
}

/// What a body item turned out to be: a node, or the `{{end}}`/`{{else}}` that ends a list.
enum Item {
    Node(Node),
    End,
    Else { pos: usize },
}

impl Item {
    fn describe(&self) -> String {
        match self {
            Item::Node(n) => n.to_string(),
            Item::End => "{{end}}".into(),
            Item::Else { .. } => "{{else}}".into(),
        }
    }
}

/// Per-tree parsing state (a `define` or `block` body starts a fresh one, as in Go).
struct Scope {
    /// Variables visible at this point (`$` always).
    vars: Vec<String>,
    range_depth: usize,
    paren_depth: usize,
    /// Line of the action being parsed (0 outside actions), for "unclosed action" errors.
    action_line: usize,
}

impl Scope {
    fn new() -> Scope {
        Scope {
            vars: vec!["$".to_string()],
            range_depth: 0,
            paren_depth: 0,
            action_line: 0,
        }
    }
}

struct Parser<'a, 'f> {
    parse_name: &'a str,
    source: Arc<str>,
    lexer: Lexer<'a>,
    /// Every token lexed so far; `cur` is the next one to hand out.
    toks: Vec<Token<'a>>,
    cur: usize,
    is_func: &'f dyn Fn(&str) -> bool,
    scope: Scope,
    /// Trees defined so far (Go's tree set), in definition order.
    trees: Vec<Tree>,
}

type PResult<T> = Result<T, ParseError>;

fn grow<T>(f: impl FnOnce() -> T) -> T {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, f)
}

impl<'a> Parser<'a, '_> {
    // ---- tokens ----

    fn fill(&mut self) {
        if self.cur >= self.toks.len() {
            let tok = self.lexer.next_token();
            self.toks.push(tok);
        }
    }

    fn next(&mut self) -> Token<'a> {
        self.fill();
        let tok = self.toks[self.cur].clone();
        self.cur += 1;
        tok
    }

    fn peek(&mut self) -> Token<'a> {
        self.fill();
        self.toks[self.cur].clone()
    }

    fn backup(&mut self) {
        self.cur = self.cur.saturating_sub(1);
    }

    fn next_non_space(&mut self) -> Token<'a> {
        loop {
            let tok = self.next();
            if tok.kind != Kind::Space {
                return tok;
            }
        }
    }

    /// Skips spaces and returns (without consuming) the next token.
    fn peek_non_space(&mut self) -> Token<'a> {
        let tok = self.next_non_space();
        self.backup();
        tok
    }

    // ---- errors ----

    /// An error at the line of the last token lexed, like Go's `Tree.errorf`.
    fn error(&self, msg: impl Into<String>) -> ParseError {
        let line = self.toks.last().map_or(1, |t| t.line);
        self.error_at(line, msg)
    }

    fn error_at(&self, line: usize, msg: impl Into<String>) -> ParseError {
        ParseError {
            name: self.parse_name.to_string(),
            line,
            msg: msg.into(),
        }
    }

    fn unexpected(&self, tok: &Token<'_>, context: &str) -> ParseError {
        if tok.kind == Kind::Error {
            let mut extra = String::new();
            let action_line = self.scope.action_line;
            if action_line != 0 && action_line != tok.line {
                extra = if tok.val.ends_with(" action") {
                    format!(" started at {}:{}", self.parse_name, action_line)
                } else {
                    format!(" in action started at {}:{}", self.parse_name, action_line)
                };
            }
            return self.error(format!("{tok}{extra}"));
        }
        self.error(format!("unexpected {tok} in {context}"))
    }

    fn expect(&mut self, kind: Kind, context: &str) -> PResult<Token<'a>> {
        let tok = self.next_non_space();
        if tok.kind != kind {
            return Err(self.unexpected(&tok, context));
        }
        Ok(tok)
    }

    // ---- trees ----

    fn tree(&self, name: String, root: List) -> Tree {
        Tree {
            name,
            parse_name: self.parse_name.to_string(),
            text: Arc::clone(&self.source),
            root,
        }
    }

    /// Go's `Tree.add`: a second non-empty definition of a name is an error; an empty one
    /// never replaces a non-empty one.
    fn add_tree(&mut self, tree: Tree) -> PResult<()> {
        match self.trees.iter().position(|t| t.name == tree.name) {
            None => self.trees.push(tree),
            Some(i) if self.trees[i].is_empty() => self.trees[i] = tree,
            Some(_) if tree.is_empty() => {}
            Some(_) => {
                return Err(self.error(format!(
                    "template: multiple definition of template {}",
                    quote(&tree.name)
                )));
            }
        }
        Ok(())
    }

    /// Runs `f` with a fresh per-tree scope (for `define` and `block` bodies).
    fn in_new_scope<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        let saved = std::mem::replace(&mut self.scope, Scope::new());
        let result = f(self);
        self.scope = saved;
        result
    }

    // ---- structure ----

    fn parse_file(&mut self) -> PResult<List> {
        let mut root = List {
            pos: self.peek().pos,
            nodes: Vec::new(),
        };
        while self.peek().kind != Kind::Eof {
            if self.peek().kind == Kind::LeftDelim {
                let save = self.cur;
                self.next();
                if self.next_non_space().kind == Kind::Define {
                    self.in_new_scope(Self::parse_definition)?;
                    continue;
                }
                self.cur = save;
            }
            match self.text_or_action()? {
                Item::Node(n) => root.nodes.push(n),
                other => return Err(self.error(format!("unexpected {}", other.describe()))),
            }
        }
        Ok(root)
    }

    /// `{{define "name"}} … {{end}}`, after the `define` keyword.
    fn parse_definition(&mut self) -> PResult<()> {
        const CONTEXT: &str = "define clause";
        let tok = self.next_non_space();
        if tok.kind != Kind::String && tok.kind != Kind::RawString {
            return Err(self.unexpected(&tok, CONTEXT));
        }
        let name = literal::unquote(&tok.val).ok_or_else(|| self.error(literal::INVALID_SYNTAX))?;
        self.expect(Kind::RightDelim, CONTEXT)?;
        let (root, end) = self.item_list()?;
        if !matches!(end, Item::End) {
            return Err(self.error(format!("unexpected {} in {CONTEXT}", end.describe())));
        }
        let tree = self.tree(name, root);
        self.add_tree(tree)
    }

    /// Nodes up to the `{{end}}` or `{{else}}` that closes them.
    fn item_list(&mut self) -> PResult<(List, Item)> {
        let mut list = List {
            pos: self.peek_non_space().pos,
            nodes: Vec::new(),
        };
        while self.peek_non_space().kind != Kind::Eof {
            match self.text_or_action()? {
                Item::Node(n) => list.nodes.push(n),
                end => return Ok((list, end)),
            }
        }
        Err(self.error("unexpected EOF"))
    }

    fn text_or_action(&mut self) -> PResult<Item> {
        let tok = self.next_non_space();
        match tok.kind {
            Kind::Text => Ok(Item::Node(Node::Text(Text {
                pos: tok.pos,
                text: Arc::from(tok.val.as_bytes()),
            }))),
            Kind::LeftDelim => {
                self.scope.action_line = tok.line;
                let result = self.action();
                self.scope.action_line = 0;
                result
            }
            _ => Err(self.unexpected(&tok, "input")),
        }
    }

    /// Inside `{{ … }}`: a control keyword or a pipeline.
    fn action(&mut self) -> PResult<Item> {
        let tok = self.next_non_space();
        let node = match tok.kind {
            Kind::Block => self.block_control()?,
            Kind::Break | Kind::Continue => {
                let what = if tok.kind == Kind::Break {
                    "break"
                } else {
                    "continue"
                };
                let next = self.next_non_space();
                if next.kind != Kind::RightDelim {
                    return Err(self.unexpected(&next, &format!("{{{{{what}}}}}")));
                }
                if self.scope.range_depth == 0 {
                    return Err(self.error(format!("{{{{{what}}}}} outside {{{{range}}}}")));
                }
                if tok.kind == Kind::Break {
                    Node::Break(tok.pos)
                } else {
                    Node::Continue(tok.pos)
                }
            }
            Kind::Else => return self.else_control(),
            Kind::End => {
                self.expect(Kind::RightDelim, "end")?;
                return Ok(Item::End);
            }
            Kind::If => Node::If(grow(|| self.parse_control("if"))?),
            Kind::Range => Node::Range(grow(|| self.parse_control("range"))?),
            Kind::With => Node::With(grow(|| self.parse_control("with"))?),
            Kind::Template => self.template_control()?,
            _ => {
                self.backup();
                let tok = self.peek();
                let pipe = self.pipeline("command", Kind::RightDelim)?;
                Node::Action(Action {
                    pos: tok.pos,
                    line: tok.line,
                    pipe,
                })
            }
        };
        Ok(Item::Node(node))
    }

    fn else_control(&mut self) -> PResult<Item> {
        let peek = self.peek_non_space();
        // `{{else if …}}`/`{{else with …}}`: leave the keyword for the enclosing control.
        if peek.kind == Kind::If || peek.kind == Kind::With {
            return Ok(Item::Else { pos: peek.pos });
        }
        let tok = self.expect(Kind::RightDelim, "else")?;
        Ok(Item::Else { pos: tok.pos })
    }

    /// `if`, `range` and `with`: pipeline, body, optional else (or `else if`/`else with`).
    fn parse_control(&mut self, context: &str) -> PResult<Branch> {
        let mark = self.scope.vars.len();
        let result = self.parse_control_body(context);
        self.scope.vars.truncate(mark);
        result
    }

    fn parse_control_body(&mut self, context: &str) -> PResult<Branch> {
        let pipe = self.pipeline(context, Kind::RightDelim)?;
        let is_range = context == "range";
        if is_range {
            self.scope.range_depth += 1;
        }
        let body = self.item_list();
        if is_range {
            self.scope.range_depth -= 1;
        }
        let (list, next) = body?;
        let else_list = match next {
            Item::Else { pos } => {
                let peek = self.peek();
                if context == "if" && peek.kind == Kind::If {
                    self.next();
                    let nested = Node::If(grow(|| self.parse_control("if"))?);
                    Some(List {
                        pos,
                        nodes: vec![nested],
                    })
                } else if context == "with" && peek.kind == Kind::With {
                    self.next();
                    let nested = Node::With(grow(|| self.parse_control("with"))?);
                    Some(List {
                        pos,
                        nodes: vec![nested],
                    })
                } else {
                    let (list, end) = self.item_list()?;
                    if !matches!(end, Item::End) {
                        return Err(self.error(format!("expected end; found {}", end.describe())));
                    }
                    Some(list)
                }
            }
            _ => None,
        };
        Ok(Branch {
            pos: pipe.pos,
            line: pipe.line,
            pipe,
            list,
            else_list,
        })
    }

    fn template_name(&self, tok: &Token<'_>, context: &str) -> PResult<String> {
        match tok.kind {
            Kind::String | Kind::RawString => {
                literal::unquote(&tok.val).ok_or_else(|| self.error(literal::INVALID_SYNTAX))
            }
            _ => Err(self.unexpected(tok, context)),
        }
    }

    /// `{{template "name" [pipeline]}}`.
    fn template_control(&mut self) -> PResult<Node> {
        const CONTEXT: &str = "template clause";
        let tok = self.next_non_space();
        let name = self.template_name(&tok, CONTEXT)?;
        let mut pipe = None;
        if self.next_non_space().kind != Kind::RightDelim {
            self.backup();
            pipe = Some(self.pipeline(CONTEXT, Kind::RightDelim)?);
        }
        Ok(Node::Template(TemplateCall {
            pos: tok.pos,
            line: tok.line,
            name,
            pipe,
        }))
    }

    /// `{{block "name" pipeline}} … {{end}}`: defines the template and calls it.
    fn block_control(&mut self) -> PResult<Node> {
        const CONTEXT: &str = "block clause";
        let tok = self.next_non_space();
        let name = self.template_name(&tok, CONTEXT)?;
        let pipe = self.pipeline(CONTEXT, Kind::RightDelim)?;
        // Go reports a bad block ending at the line of the block's own action.
        let header_line = self.toks.last().map_or(1, |t| t.line);
        let block_name = name.clone();
        self.in_new_scope(|p| {
            let (root, end) = grow(|| p.item_list())?;
            if !matches!(end, Item::End) {
                return Err(p.error_at(header_line, format!("unexpected {} in {CONTEXT}", end.describe())));
            }
            let tree = p.tree(block_name, root);
            p.add_tree(tree)
        })?;
        Ok(Node::Template(TemplateCall {
            pos: tok.pos,
            line: tok.line,
            name,
            pipe: Some(pipe),
        }))
    }

    // ---- pipelines ----

    fn pipeline(&mut self, context: &str, end: Kind) -> PResult<Pipe> {
        let first = self.peek_non_space();
        let mut pipe = Pipe {
            pos: first.pos,
            line: first.line,
            is_assign: false,
            decl: Vec::new(),
            cmds: Vec::new(),
        };
        self.declarations(context, &mut pipe)?;
        loop {
            let tok = self.next_non_space();
            match tok.kind {
                k if k == end => {
                    self.check_pipeline(&pipe, context)?;
                    return Ok(pipe);
                }
                Kind::Bool
                | Kind::CharConstant
                | Kind::Complex
                | Kind::Dot
                | Kind::Field
                | Kind::Identifier
                | Kind::Number
                | Kind::Nil
                | Kind::RawString
                | Kind::String
                | Kind::Variable
                | Kind::LeftParen => {
                    self.backup();
                    let cmd = self.command()?;
                    pipe.cmds.push(cmd);
                }
                _ => return Err(self.unexpected(&tok, context)),
            }
        }
    }

    /// `$x :=`, `$x =` and `range $i, $v :=` at the start of a pipeline.
    fn declarations(&mut self, context: &str, pipe: &mut Pipe) -> PResult<()> {
        loop {
            let v = self.peek_non_space();
            if v.kind != Kind::Variable {
                return Ok(());
            }
            let var_index = self.cur;
            self.next();
            let next = self.peek_non_space();
            let variable = Variable {
                pos: v.pos,
                names: vec![v.val.to_string()],
            };
            match next.kind {
                Kind::Assign | Kind::Declare => {
                    pipe.is_assign = next.kind == Kind::Assign;
                    self.next_non_space();
                    pipe.decl.push(variable);
                    self.scope.vars.push(v.val.to_string());
                    return Ok(());
                }
                Kind::Char if next.val == "," => {
                    self.next_non_space();
                    pipe.decl.push(variable);
                    self.scope.vars.push(v.val.to_string());
                    if context == "range" && pipe.decl.len() < 2 {
                        match self.peek_non_space().kind {
                            Kind::Variable | Kind::RightDelim | Kind::RightParen => continue,
                            _ => return Err(self.error("range can only initialize variables")),
                        }
                    }
                    return Err(self.error(format!("too many declarations in {context}")));
                }
                _ => {
                    // Not a declaration: the variable is the first operand.
                    self.cur = var_index;
                    return Ok(());
                }
            }
        }
    }

    fn check_pipeline(&self, pipe: &Pipe, context: &str) -> PResult<()> {
        if pipe.cmds.is_empty() {
            return Err(self.error(format!("missing value for {context}")));
        }
        for (i, cmd) in pipe.cmds.iter().enumerate().skip(1) {
            if matches!(
                cmd.args.first(),
                Some(Expr::Bool(..) | Expr::Dot(_) | Expr::Nil(_) | Expr::Number(_) | Expr::String { .. })
            ) {
                return Err(self.error(format!("non executable command in pipeline stage {}", i + 1)));
            }
        }
        Ok(())
    }

    fn command(&mut self) -> PResult<Command> {
        let mut cmd = Command {
            pos: self.peek_non_space().pos,
            args: Vec::new(),
        };
        loop {
            self.peek_non_space();
            if let Some(operand) = self.operand()? {
                cmd.args.push(operand);
            }
            let tok = self.next();
            match tok.kind {
                Kind::Space => continue,
                Kind::RightDelim | Kind::RightParen => self.backup(),
                Kind::Pipe => {}
                _ => return Err(self.unexpected(&tok, "operand")),
            }
            break;
        }
        if cmd.args.is_empty() {
            return Err(self.error("empty command"));
        }
        Ok(cmd)
    }

    /// A term followed by any `.field` chain.
    fn operand(&mut self) -> PResult<Option<Expr>> {
        let Some(node) = self.term()? else {
            return Ok(None);
        };
        let first = self.peek();
        if first.kind != Kind::Field {
            return Ok(Some(node));
        }
        let mut fields = Vec::new();
        while self.peek().kind == Kind::Field {
            let tok = self.next();
            fields.push(tok.val.get(1..).unwrap_or("").to_string());
        }
        let pos = first.pos;
        Ok(Some(match node {
            Expr::Field(_, mut names) => {
                names.extend(fields);
                Expr::Field(pos, names)
            }
            Expr::Variable(mut v) => {
                v.names.extend(fields);
                Expr::Variable(Variable { pos, names: v.names })
            }
            Expr::Bool(..) | Expr::String { .. } | Expr::Number(_) | Expr::Nil(_) | Expr::Dot(_) => {
                return Err(self.error(format!("unexpected . after term {}", quote(&node.to_string()))));
            }
            other => Expr::Chain {
                pos,
                node: Box::new(other),
                fields,
            },
        }))
    }

    fn term(&mut self) -> PResult<Option<Expr>> {
        let tok = self.next_non_space();
        let expr = match tok.kind {
            Kind::Identifier => {
                if !(self.is_func)(&tok.val) {
                    return Err(self.error(format!("function {} not defined", quote(&tok.val))));
                }
                Expr::Identifier(tok.pos, tok.val.to_string())
            }
            Kind::Dot => Expr::Dot(tok.pos),
            Kind::Nil => Expr::Nil(tok.pos),
            Kind::Variable => {
                if !self.scope.vars.iter().any(|v| *v == tok.val) {
                    return Err(self.error(format!("undefined variable {}", quote(&tok.val))));
                }
                Expr::Variable(Variable {
                    pos: tok.pos,
                    names: vec![tok.val.to_string()],
                })
            }
            Kind::Field => Expr::Field(tok.pos, vec![tok.val.get(1..).unwrap_or("").to_string()]),
            Kind::Bool => Expr::Bool(tok.pos, tok.val == "true"),
            Kind::CharConstant | Kind::Complex | Kind::Number => Expr::Number(self.number(&tok)?),
            Kind::LeftParen => {
                if self.scope.paren_depth >= MAX_PAREN_DEPTH {
                    return Err(self.error("max expression depth exceeded"));
                }
                self.scope.paren_depth += 1;
                let pipe = grow(|| self.pipeline("parenthesized pipeline", Kind::RightParen));
                self.scope.paren_depth -= 1;
                Expr::Pipe(Box::new(pipe?))
            }
            Kind::String | Kind::RawString => {
                let bytes =
                    literal::unquote_bytes(&tok.val).ok_or_else(|| self.error(literal::INVALID_SYNTAX))?;
                Expr::String {
                    pos: tok.pos,
                    quoted: tok.val.to_string(),
                    value: crate::ast::StrLit::from_go_bytes(bytes),
                }
            }
            _ => {
                self.backup();
                return Ok(None);
            }
        };
        Ok(Some(expr))
    }

    fn number(&self, tok: &Token<'_>) -> PResult<Number> {
        let text = tok.val.to_string();
        let value = if tok.kind == Kind::CharConstant {
            literal::char_constant(&text).map(|c| literal::NumberValue {
                int: Some(c),
                uint: u64::try_from(c).ok(),
                float: Some(c as f64),
                complex: None,
            })
        } else {
            literal::number(&text, tok.kind == Kind::Complex)
        }
        .map_err(|e| self.error(e.message()))?;
        Ok(Number {
            pos: tok.pos,
            is_char: tok.kind == Kind::CharConstant,
            text,
            int: value.int,
            uint: value.uint,
            float: value.float,
            complex: value.complex,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn funcs(name: &str) -> bool {
        matches!(name, "print" | "printf" | "len" | "and" | "or" | "not" | "eq")
    }

    fn ok(text: &str) -> ParsedFile {
        match parse("t", text, &funcs) {
            Ok(p) => p,
            Err(e) => panic!("parse of {text:?} failed: {e}"),
        }
    }

    fn err(text: &str) -> String {
        match parse("t", text, &funcs) {
            Ok(_) => panic!("parse of {text:?} succeeded"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn round_trips_through_node_strings() {
        for src in [
            "a{{.x.y}}b",
            "{{if .a}}x{{else}}y{{end}}",
            "{{range $i, $v := .}}{{$i}}{{end}}",
            "{{with $x := 1}}{{$x}}{{end}}",
            "{{(print 1).a}}",
            "{{print \"a\" `b` 'c' 1.5 nil true | printf \"%v\"}}",
            "{{template \"x\" .}}",
        ] {
            assert_eq!(ok(src).main.root.to_string(), src);
        }
    }

    #[test]
    fn else_if_nests() {
        let p = ok("{{if 1}}a{{else if 2}}b{{else}}c{{end}}");
        assert_eq!(
            p.main.root.to_string(),
            "{{if 1}}a{{else}}{{if 2}}b{{else}}c{{end}}{{end}}"
        );
    }

    #[test]
    fn defines_are_collected() {
        let p = ok("{{define \"a\"}}A{{end}}x{{block \"b\" .}}B{{end}}");
        let names: Vec<_> = p.defines.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, vec!["a", "b"]);
        assert_eq!(p.main.root.to_string(), "x{{template \"b\" .}}");
    }

    #[test]
    fn field_positions_follow_go() {
        // A chained field node sits at its second field, as in Go.
        let p = ok("{{ .Values.missing.x }}");
        let Node::Action(a) = &p.main.root.nodes[0] else {
            panic!()
        };
        assert_eq!(a.pipe.cmds[0].args[0].pos(), 10);
    }

    #[test]
    fn errors_match_go() {
        assert_eq!(err("{{ if 1 }}"), "template: t:1: unexpected EOF");
        assert_eq!(err("{{ end }}"), "template: t:1: unexpected {{end}}");
        assert_eq!(err("{{ 1 }"), "template: t:1: unexpected \"}\" in operand");
        assert_eq!(err("{{ nope }}"), "template: t:1: function \"nope\" not defined");
        assert_eq!(err("{{ $x }}"), "template: t:1: undefined variable \"$x\"");
        assert_eq!(err("{{ }}"), "template: t:1: missing value for command");
        assert_eq!(err("{{ break }}"), "template: t:1: {{break}} outside {{range}}");
        assert_eq!(
            err("a\n{{ 1\n\n"),
            "template: t:4: unclosed action started at t:2"
        );
        assert_eq!(
            err("{{define \"a\"}}x{{end}}{{define \"a\"}}y{{end}}"),
            "template: t:1: template: multiple definition of template \"a\""
        );
    }

    #[test]
    fn paren_depth_is_bounded() {
        let deep = |n: usize| format!("{{{{{}1{}}}}}", "(".repeat(n), ")".repeat(n));
        assert!(parse("t", &deep(10_000), &funcs).is_ok());
        assert!(err(&deep(10_001)).ends_with("max expression depth exceeded"));
    }

    #[test]
    fn deep_control_nesting_does_not_overflow() {
        let n = 20_000;
        let src = format!("{}x{}", "{{if 1}}".repeat(n), "{{end}}".repeat(n));
        assert!(parse("t", &src, &funcs).is_ok());
    }
}
