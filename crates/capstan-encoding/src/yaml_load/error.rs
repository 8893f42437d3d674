//! Errors with go-yaml v2's texts and line-number quirks.

use std::fmt;

/// A position in the input: character index, 0-based line and column.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mark {
    pub index: usize,
    pub line: usize,
    pub column: usize,
}

/// Which stage found a syntax error (go-yaml numbers the line differently for each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Reader,
    Scanner,
    Parser,
}

/// A syntax error as libyaml reports it: a problem at a mark, within a context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub stage: Stage,
    pub context: &'static str,
    pub context_mark: Mark,
    pub problem: &'static str,
    pub problem_mark: Mark,
}

impl SyntaxError {
    pub fn scanner(
        context: &'static str,
        context_mark: Mark,
        problem: &'static str,
        problem_mark: Mark,
    ) -> SyntaxError {
        SyntaxError {
            stage: Stage::Scanner,
            context,
            context_mark,
            problem,
            problem_mark,
        }
    }

    pub fn parser(
        context: &'static str,
        context_mark: Mark,
        problem: &'static str,
        problem_mark: Mark,
    ) -> SyntaxError {
        SyntaxError {
            stage: Stage::Parser,
            context,
            context_mark,
            problem,
            problem_mark,
        }
    }

    /// The line go-yaml prints: the problem's 0-based line (plus one for scanner errors),
    /// else the context's 0-based line; a zero means no line is printed at all.
    pub fn go_line(&self) -> usize {
        if self.problem_mark.line != 0 {
            match self.stage {
                Stage::Scanner => self.problem_mark.line + 1,
                _ => self.problem_mark.line,
            }
        } else if self.context_mark.line != 0 {
            self.context_mark.line
        } else {
            0
        }
    }
}

/// A YAML load failure, with the message text Go prints for it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum YamlError {
    /// Malformed YAML (`yaml: line 3: mapping values are not allowed in this context`).
    #[error("{}", syntax_message(.0))]
    Syntax(SyntaxError),
    /// A decoding failure (`yaml: unknown anchor 'x' referenced`); the text is without
    /// the `yaml: ` prefix.
    #[error("yaml: {0}")]
    Decode(String),
    /// The JSON step failed (`json: unsupported value: +Inf`, `unsupported map key …`).
    #[error("{0}")]
    Json(String),
    /// `encoding/json` refused to decode the JSON text (`invalid character '[' exceeded max
    /// depth`).
    #[error("{0}")]
    JsonDecode(String),
    /// The k8s document reader rejected a `---` line with content after it.
    #[error("invalid Yaml document separator: {0}")]
    Separator(String),
}

fn syntax_message(e: &SyntaxError) -> String {
    let line = e.go_line();
    if line == 0 {
        format!("yaml: {}", e.problem)
    } else {
        format!("yaml: line {line}: {}", e.problem)
    }
}

impl YamlError {
    /// The 1-based line of the problem, when known (for diagnostics; Go's text may differ).
    pub fn line(&self) -> Option<usize> {
        match self {
            YamlError::Syntax(e) => Some(e.problem_mark.line + 1),
            _ => None,
        }
    }

    /// The 1-based column of the problem, when known.
    pub fn column(&self) -> Option<usize> {
        match self {
            YamlError::Syntax(e) => Some(e.problem_mark.column + 1),
            _ => None,
        }
    }

    /// The message as `sigs.k8s.io/yaml.Unmarshal` wraps it into a `map[string]interface{}`:
    /// YAML failures are "error converting YAML to JSON: …".
    pub fn sigs_message(&self) -> String {
        match self {
            YamlError::Syntax(_) | YamlError::Decode(_) | YamlError::Json(_) => {
                format!("error converting YAML to JSON: {self}")
            }
            YamlError::JsonDecode(msg) => {
                format!("error unmarshaling JSON: while decoding JSON: {msg}")
            }
            YamlError::Separator(_) => self.to_string(),
        }
    }
}

impl fmt::Display for Mark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {} column {}", self.line + 1, self.column + 1)
    }
}
