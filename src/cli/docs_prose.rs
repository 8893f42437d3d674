//! Text from the code (help texts, schema descriptions) made safe as Markdown for the book's
//! generated pages.

/// `text` as Markdown prose: `<` and `>` outside code spans escaped, so a placeholder such as
/// `<DIR>` shows instead of being taken for an HTML tag.
pub fn prose(text: &str) -> String {
    text.split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                part.to_string()
            } else {
                part.replace('<', "&lt;").replace('>', "&gt;")
            }
        })
        .collect::<Vec<_>>()
        .join("`")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_escapes_angle_brackets_outside_code_only() {
        assert_eq!(prose("write into <DIR>"), "write into &lt;DIR&gt;");
        assert_eq!(prose("`--dir <DIR>` or <x>"), "`--dir <DIR>` or &lt;x&gt;");
        assert_eq!(prose("plain"), "plain");
    }
}
