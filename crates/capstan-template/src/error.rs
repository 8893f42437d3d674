//! Template errors, printable both the way Go's `text/template` prints them and the way
//! Helm v4.2.3 reformats them.

use std::fmt;

/// A parse error: Go prints `template: <name>:<line>: <msg>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("template: {name}:{line}: {msg}")]
pub struct ParseError {
    /// The parse name (file) of the template text.
    pub name: String,
    pub line: usize,
    pub msg: String,
}

impl ParseError {
    /// Helm's `parse error at (<file>:<line>): <msg>`; like Helm it keeps only the part of the
    /// message after its last `": "`.
    pub fn helm_message(&self) -> String {
        let msg = self.msg.rsplit(": ").next().unwrap_or(&self.msg);
        format!("parse error at ({}:{}): {}", self.name, self.line, msg)
    }
}

/// An execution error raised at a node: `template: <loc>: executing "<name>" at <<ctx>>: …`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecError {
    /// `file:line:col` of the node, or just the template name when there is no node.
    pub location: String,
    /// The name of the template being executed.
    pub name: String,
    /// The node printed back as source; `None` when the error has no node.
    pub context: Option<String>,
    pub kind: ExecErrorKind,
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecErrorKind {
    /// An error raised by the executor itself (nil pointer, wrong type, …).
    Message(String),
    /// A function returned an error: `error calling <func>: <cause>`.
    Call { func: String, cause: FuncError },
}

/// An error returned by a template function.
#[derive(Debug, Clone, PartialEq)]
pub enum FuncError {
    /// A plain error message (Go `errors.New`/`fmt.Errorf`, or a recovered panic).
    Message(String),
    /// A template executed by the function failed (`include`): the inner error is kept whole.
    Template(Box<ExecError>),
    /// The named template does not exist (`include` of an unknown name).
    NoTemplate { name: String },
}

impl FuncError {
    pub fn msg(m: impl Into<String>) -> FuncError {
        FuncError::Message(m.into())
    }
}

/// A value that contains itself reached a print function.
impl From<capstan_go::fmt::CycleError> for FuncError {
    fn from(e: capstan_go::fmt::CycleError) -> FuncError {
        FuncError::msg(e.to_string())
    }
}

impl fmt::Display for FuncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FuncError::Message(m) => f.write_str(m),
            FuncError::Template(e) => write!(f, "{e}"),
            FuncError::NoTemplate { name } => {
                write!(
                    f,
                    "template: no template {} associated with template \"gotpl\"",
                    capstan_go::fmt::quote(name)
                )
            }
        }
    }
}

impl fmt::Display for ExecError {
    /// Go's single-line form. Iterative: an include chain can nest a thousand errors deep,
    /// which a recursive `Display` would turn into a stack overflow.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut current = self;
        loop {
            match &current.context {
                Some(ctx) => write!(
                    f,
                    "template: {}: executing {} at <{}>: ",
                    current.location,
                    capstan_go::fmt::quote(&current.name),
                    ctx
                )?,
                None => write!(f, "template: {}: ", current.location)?,
            }
            match &current.kind {
                ExecErrorKind::Message(m) => return f.write_str(m),
                ExecErrorKind::Call { func, cause } => {
                    write!(f, "error calling {func}: ")?;
                    match cause {
                        FuncError::Template(inner) => current = inner,
                        other => return write!(f, "{other}"),
                    }
                }
            }
        }
    }
}

impl std::error::Error for ExecError {}

/// Marker Helm wraps `fail`/`required` messages in, to find them again in the error chain.
pub const HELM_WARN_START: &str = "HELM_ERR_START";
pub const HELM_WARN_END: &str = "HELM_ERR_END";

impl ExecError {
    /// The message as Helm v4.2.3 reports it.
    ///
    /// `fail`/`required` messages become `execution error at (<outer location>): <msg>`.
    /// When every error in the chain is a template error, Helm prints one block per frame
    /// (`<loc>\n  executing "<name>" at <<ctx>>:\n    <msg>`); as soon as the chain holds any
    /// other error (a function's own error, a `tpl` failure), it keeps Go's single line.
    pub fn helm_message(&self) -> String {
        let go = self.to_string();
        if let Some(warn) = find_warning(&go) {
            let location = go.split(": ").nth(1).unwrap_or(&self.location);
            return format!("execution error at ({location}): {warn}");
        }
        let mut blocks = Vec::new();
        if !self.collect_blocks(&mut blocks) {
            return go;
        }
        blocks.join("\n").trim().to_string()
    }

    /// Appends this error's frames; false when the chain is not purely template errors.
    fn collect_blocks(&self, out: &mut Vec<String>) -> bool {
        // Iterative for the same reason as `Display`: chains can be very deep.
        let mut current = self;
        loop {
            let head = match &current.context {
                Some(ctx) => format!(
                    "{}\n  executing {} at <{}>:\n    ",
                    current.location,
                    capstan_go::fmt::quote(&current.name),
                    ctx
                ),
                None => format!("{}\n  ", current.location),
            };
            match &current.kind {
                ExecErrorKind::Message(m) => {
                    out.push(format!("{head}{m}"));
                    return true;
                }
                ExecErrorKind::Call { func, cause } => {
                    out.push(format!("{head}error calling {func}:"));
                    match cause {
                        FuncError::Message(_) => return false,
                        FuncError::NoTemplate { .. } => {
                            out.push(cause.to_string());
                            return true;
                        }
                        FuncError::Template(inner) => current = inner,
                    }
                }
            }
        }
    }
}

/// The text between Helm's warning markers, if the message carries one. Helm's pattern is
/// `HELM_ERR_START((?s).*)HELM_ERR_END`: greedy, across newlines.
fn find_warning(s: &str) -> Option<&str> {
    let start = s.find(HELM_WARN_START)? + HELM_WARN_START.len();
    let rest = &s[start..];
    let end = rest.rfind(HELM_WARN_END)?;
    Some(&rest[..end])
}

/// Any error from parsing or executing templates.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Exec(#[from] Box<ExecError>),
    /// `ExecuteTemplate` of a name that was never defined.
    #[error(
        "template: no template {} associated with template {}",
        capstan_go::fmt::quote(name),
        capstan_go::fmt::quote(set)
    )]
    NoTemplate { name: String, set: String },
}

impl Error {
    /// The message as Helm v4.2.3 prints it.
    pub fn helm_message(&self) -> String {
        match self {
            Error::Parse(e) => e.helm_message(),
            Error::Exec(e) => e.helm_message(),
            Error::NoTemplate { .. } => self.to_string(),
        }
    }
}
