//! Lexer for the text/template language (placeholder until the parser lands).
