//! The parser/composer: tokens → a node graph for the first document, following libyaml's
//! grammar (block/flow collections, indentless sequences, empty nodes) and its error texts.

use std::collections::HashMap;

use super::error::{Mark, SyntaxError, YamlError};
use super::scanner::{ScalarStyle, Token, TokenKind};

pub type NodeId = usize;

#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    Scalar { value: String, style: ScalarStyle },
    Sequence(Vec<NodeId>),
    Mapping(Vec<(NodeId, NodeId)>),
    Alias { name: String, target: NodeId },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub kind: NodeKind,
    /// The resolved tag (`tag:yaml.org,2002:str`, `!foo`), or empty when none was given.
    pub tag: String,
    pub start: Mark,
}

/// A parsed document: nodes in an arena (aliases point at their anchored node by id).
#[derive(Debug, Default)]
pub struct Document {
    pub nodes: Vec<Node>,
    pub root: Option<NodeId>,
}

impl Document {
    /// The node arena, emptied, for the next document's parse.
    pub fn into_nodes(mut self) -> Vec<Node> {
        self.nodes.clear();
        self.nodes
    }
}

struct Parser<'t> {
    tokens: &'t [Token],
    pos: usize,
    doc: Document,
    anchors: HashMap<String, NodeId>,
    tag_handles: Vec<(String, String)>,
}

/// Parses the first document of the token stream (`None` for a stream without documents),
/// which is all go-yaml v2's `Unmarshal` reads.
/// Its nodes are built in `nodes` (emptied first, its capacity reused;
/// [`Document::into_nodes`] hands it back).
pub fn parse_first_document(tokens: &[Token], mut nodes: Vec<Node>) -> Result<Document, YamlError> {
    nodes.clear();
    let mut p = Parser {
        tokens,
        pos: 0,
        doc: Document { nodes, root: None },
        anchors: HashMap::new(),
        tag_handles: Vec::new(),
    };
    p.document()?;
    Ok(p.doc)
}

const EMPTY_STOP_BLOCK: [&TokenKind; 3] = [&TokenKind::Key, &TokenKind::Value, &TokenKind::BlockEnd];

impl<'t> Parser<'t> {
    fn peek(&self) -> Result<&'t Token, YamlError> {
        let tokens: &'t [Token] = self.tokens;
        match tokens.get(self.pos).or_else(|| tokens.last()) {
            Some(Token {
                kind: TokenKind::Error(e),
                ..
            }) => Err(YamlError::Syntax(e.as_ref().clone())),
            Some(t) => Ok(t),
            None => Err(YamlError::Decode("unexpected end of token stream".into())),
        }
    }

    fn skip(&mut self) {
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
    }

    fn is(&self, kind: &TokenKind) -> Result<bool, YamlError> {
        Ok(&self.peek()?.kind == kind)
    }

    fn is_any(&self, kinds: &[&TokenKind]) -> Result<bool, YamlError> {
        let k = &self.peek()?.kind;
        Ok(kinds.contains(&k))
    }

    fn fail(
        &self,
        context: &'static str,
        context_mark: Mark,
        problem: &'static str,
        problem_mark: Mark,
    ) -> YamlError {
        YamlError::Syntax(SyntaxError::parser(context, context_mark, problem, problem_mark))
    }

    fn add(&mut self, kind: NodeKind, tag: String, start: Mark) -> NodeId {
        self.doc.nodes.push(Node { kind, tag, start });
        self.doc.nodes.len() - 1
    }

    fn empty_scalar(&mut self, mark: Mark) -> NodeId {
        self.add(
            NodeKind::Scalar {
                value: String::new(),
                style: ScalarStyle::Plain,
            },
            String::new(),
            mark,
        )
    }

    fn document(&mut self) -> Result<(), YamlError> {
        if self.is(&TokenKind::StreamStart)? {
            self.skip();
        }
        // (A `...` before the first document is not skipped: it is where a node should be.)
        let token = self.peek()?;
        match &token.kind {
            TokenKind::StreamEnd => return Ok(()),
            TokenKind::VersionDirective { .. }
            | TokenKind::TagDirective { .. }
            | TokenKind::DocumentStart => {
                self.directives()?;
                let token = self.peek()?;
                if token.kind != TokenKind::DocumentStart {
                    return Err(self.fail(
                        "",
                        Mark::default(),
                        "did not find expected <document start>",
                        token.start,
                    ));
                }
                self.skip();
                let next = self.peek()?;
                let root = if matches!(
                    next.kind,
                    TokenKind::VersionDirective { .. }
                        | TokenKind::TagDirective { .. }
                        | TokenKind::DocumentStart
                        | TokenKind::DocumentEnd
                        | TokenKind::StreamEnd
                ) {
                    self.empty_scalar(next.start)
                } else {
                    self.node(true, false)?
                };
                self.doc.root = Some(root);
            }
            _ => {
                let root = self.node(true, false)?;
                self.doc.root = Some(root);
            }
        }
        // go-yaml stops after the first document's root node: what follows it (even stray
        // content such as `{a: 1}\nb: 2`) is only peeked at for the document end, so just a
        // scanning error right there surfaces.
        self.peek()?;
        Ok(())
    }

    fn directives(&mut self) -> Result<(), YamlError> {
        let mut seen_version = false;
        loop {
            let token = self.peek()?;
            match &token.kind {
                TokenKind::VersionDirective { major, minor } => {
                    if seen_version {
                        return Err(self.fail(
                            "",
                            Mark::default(),
                            "found duplicate %YAML directive",
                            token.start,
                        ));
                    }
                    if (*major, *minor) != (1, 1) {
                        return Err(self.fail(
                            "",
                            Mark::default(),
                            "found incompatible YAML document",
                            token.start,
                        ));
                    }
                    seen_version = true;
                }
                TokenKind::TagDirective { handle, prefix } => {
                    if self.tag_handles.iter().any(|(h, _)| **h == **handle) {
                        return Err(self.fail(
                            "",
                            Mark::default(),
                            "found duplicate %TAG directive",
                            token.start,
                        ));
                    }
                    self.tag_handles.push((handle.to_string(), prefix.to_string()));
                }
                _ => return Ok(()),
            }
            self.skip();
        }
    }

    fn resolve_tag(
        &self,
        handle: &str,
        suffix: &str,
        context_mark: Mark,
        mark: Mark,
    ) -> Result<String, YamlError> {
        if handle.is_empty() {
            return Ok(suffix.to_string());
        }
        if let Some((_, prefix)) = self.tag_handles.iter().find(|(h, _)| h == handle) {
            return Ok(format!("{prefix}{suffix}"));
        }
        match handle {
            "!" => Ok(format!("!{suffix}")),
            "!!" => Ok(format!("tag:yaml.org,2002:{suffix}")),
            _ => Err(self.fail(
                "while parsing a node",
                context_mark,
                "found undefined tag handle",
                mark,
            )),
        }
    }

    fn node(&mut self, block: bool, indentless: bool) -> Result<NodeId, YamlError> {
        crate::yaml_load::deep::grow(|| self.node_inner(block, indentless))
    }

    fn node_inner(&mut self, block: bool, indentless: bool) -> Result<NodeId, YamlError> {
        let token = self.peek()?;
        let start = token.start;
        if let TokenKind::Alias(name) = &token.kind {
            self.skip();
            let target = match self.anchors.get(name) {
                Some(t) => *t,
                None => {
                    return Err(YamlError::Decode(format!("unknown anchor '{name}' referenced")));
                }
            };
            return Ok(self.add(
                NodeKind::Alias {
                    name: name.clone(),
                    target,
                },
                String::new(),
                start,
            ));
        }
        let mut anchor: Option<String> = None;
        let mut tag: Option<(String, String, Mark)> = None;
        for _ in 0..2 {
            let t = self.peek()?;
            match &t.kind {
                TokenKind::Anchor(name) if anchor.is_none() => {
                    anchor = Some(name.clone());
                    self.skip();
                }
                TokenKind::Tag { handle, suffix } if tag.is_none() => {
                    tag = Some((handle.to_string(), suffix.to_string(), t.start));
                    self.skip();
                }
                _ => break,
            }
        }
        let tag = match tag {
            Some((handle, suffix, mark)) => self.resolve_tag(&handle, &suffix, start, mark)?,
            None => String::new(),
        };
        let token = self.peek()?;
        // Reserve the node first so the anchor is known while its content is parsed.
        let id = self.add(
            NodeKind::Scalar {
                value: String::new(),
                style: ScalarStyle::Plain,
            },
            tag.clone(),
            start,
        );
        if let Some(name) = &anchor {
            self.anchors.insert(name.clone(), id);
        }
        let kind = match &token.kind {
            TokenKind::BlockEntry if indentless => self.indentless_sequence()?,
            TokenKind::Scalar { value, style } => {
                self.skip();
                NodeKind::Scalar {
                    value: value.clone(),
                    style: *style,
                }
            }
            TokenKind::FlowSequenceStart => self.flow_sequence()?,
            TokenKind::FlowMappingStart => self.flow_mapping()?,
            TokenKind::BlockSequenceStart if block => self.block_sequence()?,
            TokenKind::BlockMappingStart if block => self.block_mapping()?,
            _ if anchor.is_some() || !tag.is_empty() => NodeKind::Scalar {
                value: String::new(),
                style: ScalarStyle::Plain,
            },
            _ => {
                let context = if block {
                    "while parsing a block node"
                } else {
                    "while parsing a flow node"
                };
                return Err(self.fail(context, start, "did not find expected node content", token.start));
            }
        };
        if let Some(node) = self.doc.nodes.get_mut(id) {
            node.kind = kind;
        }
        Ok(id)
    }

    fn block_sequence(&mut self) -> Result<NodeKind, YamlError> {
        let start = self.peek()?.start;
        self.skip();
        let mut items = Vec::new();
        loop {
            let token = self.peek()?;
            match token.kind {
                TokenKind::BlockEntry => {
                    let mark = token.end;
                    self.skip();
                    if self.is_any(&[&TokenKind::BlockEntry, &TokenKind::BlockEnd])? {
                        items.push(self.empty_scalar(mark));
                    } else {
                        items.push(self.node(true, false)?);
                    }
                }
                TokenKind::BlockEnd => {
                    self.skip();
                    return Ok(NodeKind::Sequence(items));
                }
                _ => {
                    return Err(self.fail(
                        "while parsing a block collection",
                        start,
                        "did not find expected '-' indicator",
                        token.start,
                    ));
                }
            }
        }
    }

    fn indentless_sequence(&mut self) -> Result<NodeKind, YamlError> {
        let mut items = Vec::new();
        while self.is(&TokenKind::BlockEntry)? {
            let mark = self.peek()?.end;
            self.skip();
            if self.is_any(&[
                &TokenKind::BlockEntry,
                &TokenKind::Key,
                &TokenKind::Value,
                &TokenKind::BlockEnd,
            ])? {
                items.push(self.empty_scalar(mark));
            } else {
                items.push(self.node(true, false)?);
            }
        }
        Ok(NodeKind::Sequence(items))
    }

    fn block_mapping(&mut self) -> Result<NodeKind, YamlError> {
        let start = self.peek()?.start;
        self.skip();
        let mut pairs = Vec::new();
        loop {
            let token = self.peek()?;
            let key = match token.kind {
                TokenKind::Key => {
                    let mark = token.end;
                    self.skip();
                    if self.is_any(&EMPTY_STOP_BLOCK)? {
                        self.empty_scalar(mark)
                    } else {
                        self.node(true, true)?
                    }
                }
                // A `:` with no key before it is not accepted in a block mapping.
                TokenKind::BlockEnd => {
                    self.skip();
                    return Ok(NodeKind::Mapping(pairs));
                }
                _ => {
                    return Err(self.fail(
                        "while parsing a block mapping",
                        start,
                        "did not find expected key",
                        token.start,
                    ));
                }
            };
            let token = self.peek()?;
            let value = if token.kind == TokenKind::Value {
                let mark = token.end;
                self.skip();
                if self.is_any(&EMPTY_STOP_BLOCK)? {
                    self.empty_scalar(mark)
                } else {
                    self.node(true, true)?
                }
            } else {
                self.empty_scalar(token.start)
            };
            pairs.push((key, value));
        }
    }

    fn flow_sequence(&mut self) -> Result<NodeKind, YamlError> {
        let start = self.peek()?.start;
        self.skip();
        let mut items = Vec::new();
        let end = TokenKind::FlowSequenceEnd;
        while let Some(token) = self.next_flow_entry(
            items.is_empty(),
            &end,
            start,
            "while parsing a flow sequence",
            "did not find expected ',' or ']'",
        )? {
            if token.kind == TokenKind::Key {
                // A single-pair mapping inside a flow sequence (`[a: 1]`).
                let pair = self.flow_pair(token, &end)?;
                items.push(self.add(NodeKind::Mapping(vec![pair]), String::new(), token.start));
            } else {
                items.push(self.node(false, false)?);
            }
        }
        Ok(NodeKind::Sequence(items))
    }

    /// Moves to the next entry of a flow collection: past the `,` that must separate it from
    /// the one before (unless it is the first). `None` once the collection's end was consumed.
    fn next_flow_entry(
        &mut self,
        first: bool,
        end: &TokenKind,
        start: Mark,
        context: &'static str,
        problem: &'static str,
    ) -> Result<Option<&'t Token>, YamlError> {
        let mut token = self.peek()?;
        if token.kind != *end && !first {
            if token.kind != TokenKind::FlowEntry {
                return Err(self.fail(context, start, problem, token.start));
            }
            self.skip();
            token = self.peek()?;
        }
        if token.kind == *end {
            self.skip();
            return Ok(None);
        }
        Ok(Some(token))
    }

    /// An explicit or implicit flow pair starting at a `Key` token: `key: value`, where either
    /// part may be empty.
    fn flow_pair(&mut self, key_token: &Token, end: &TokenKind) -> Result<(NodeId, NodeId), YamlError> {
        let mark = key_token.end;
        self.skip();
        let key = if self.is_any(&[&TokenKind::Value, &TokenKind::FlowEntry, end])? {
            self.empty_scalar(mark)
        } else {
            self.node(false, false)?
        };
        let value = self.flow_value(end)?;
        Ok((key, value))
    }

    /// The value part of a flow pair: `: node`, `:` alone, or nothing.
    fn flow_value(&mut self, end: &TokenKind) -> Result<NodeId, YamlError> {
        let token = self.peek()?;
        if token.kind == TokenKind::Value {
            let mark = token.end;
            self.skip();
            if self.is_any(&[&TokenKind::FlowEntry, end])? {
                Ok(self.empty_scalar(mark))
            } else {
                self.node(false, false)
            }
        } else {
            Ok(self.empty_scalar(token.start))
        }
    }

    fn flow_mapping(&mut self) -> Result<NodeKind, YamlError> {
        let start = self.peek()?.start;
        self.skip();
        let mut pairs = Vec::new();
        let end = TokenKind::FlowMappingEnd;
        while let Some(token) = self.next_flow_entry(
            pairs.is_empty(),
            &end,
            start,
            "while parsing a flow mapping",
            "did not find expected ',' or '}'",
        )? {
            if token.kind == TokenKind::Key {
                pairs.push(self.flow_pair(token, &end)?);
            } else {
                let key = self.node(false, false)?;
                let mark = self.peek()?.start;
                pairs.push((key, self.empty_scalar(mark)));
            }
        }
        Ok(NodeKind::Mapping(pairs))
    }
}
