//! Plain-text tables for `capstan get` and `capstan describe`: upper-case headers, columns
//! padded to their widest cell and three spaces apart (as `kubectl get` prints them), an empty
//! cell shown as `-`. Colour only marks the state words (`True` green, `False` red, `Unknown`
//! yellow) and only when the caller says the output is a terminal.

/// A table: its headers and rows of cells.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    pub headers: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
}

/// The gap between two columns.
const GAP: &str = "   ";

/// A cell that holds nothing.
pub const NONE: &str = "-";

impl Table {
    pub fn new(headers: Vec<&'static str>) -> Table {
        Table {
            headers,
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// Widths of the columns: the widest of the header and every cell (in characters).
    pub fn widths(&self) -> Vec<usize> {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate() {
                if let Some(w) = widths.get_mut(i) {
                    *w = (*w).max(cell_text(cell).chars().count());
                }
            }
        }
        widths
    }

    /// The whole table, header first, one line per row, each line ending in `\n`.
    pub fn render(&self, colour: bool) -> String {
        let widths = self.widths();
        let mut out = line(
            &self.headers.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
            &widths,
            false,
        );
        for row in &self.rows {
            out.push_str(&line(row, &widths, colour));
        }
        out
    }

    /// The rows alone, padded to at least `widths` (a watch prints later rows under the first
    /// table's header).
    pub fn render_rows(&self, widths: &[usize], colour: bool) -> String {
        let own = self.widths();
        let widths: Vec<usize> = own
            .iter()
            .enumerate()
            .map(|(i, w)| (*w).max(widths.get(i).copied().unwrap_or(0)))
            .collect();
        self.rows.iter().map(|row| line(row, &widths, colour)).collect()
    }
}

fn cell_text(cell: &str) -> &str {
    if cell.is_empty() { NONE } else { cell }
}

/// One line: cells padded to their column's width, the last one not padded.
fn line(cells: &[String], widths: &[usize], colour: bool) -> String {
    let mut out = String::new();
    for (i, cell) in cells.iter().enumerate() {
        let text = cell_text(cell);
        if i > 0 {
            out.push_str(GAP);
        }
        out.push_str(&paint(text, colour));
        if i + 1 < cells.len() {
            let width = widths.get(i).copied().unwrap_or(0);
            let pad = width.saturating_sub(text.chars().count());
            out.extend(std::iter::repeat_n(' ', pad));
        }
    }
    out.push('\n');
    out
}

/// A state word in its colour (ANSI SGR), other text as it is.
pub fn paint(text: &str, colour: bool) -> String {
    let code = match text {
        _ if !colour => None,
        "True" => Some("32"),
        "False" => Some("31"),
        "Unknown" => Some("33"),
        _ => None,
    };
    match code {
        Some(code) => format!("\x1b[{code}m{text}\x1b[0m"),
        None => text.to_string(),
    }
}

/// Whether to colour what goes to stdout: a terminal, and `NO_COLOR` not set
/// (<https://no-color.org>).
pub fn colour_stdout() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stdout()) && std::env::var_os("NO_COLOR").is_none()
}

/// `text` on one line (line breaks become spaces) and at most `max` characters, an ellipsis
/// marking a cut.
pub fn one_line(text: &str, max: Option<usize>) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match max {
        Some(max) if flat.chars().count() > max => {
            let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
            cut.push('…');
            cut
        }
        _ => flat,
    }
}

/// A duration in seconds as `kubectl get` words an age: `45s`, `3m20s`, `17m`, `5h12m`, `30h`,
/// `3d4h`, `24d`, `2y30d`. Negative durations (clocks apart) read as `0s`.
pub fn age(seconds: i64) -> String {
    let s = seconds.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86_400);
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        match s % 60 {
            0 => format!("{m}m"),
            rest => format!("{m}m{rest}s"),
        }
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 {
        match m % 60 {
            0 => format!("{h}h"),
            rest => format!("{h}h{rest}m"),
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 192 {
        match h % 24 {
            0 => format!("{d}d"),
            rest => format!("{d}d{rest}h"),
        }
    } else if d < 730 {
        format!("{d}d")
    } else {
        let (y, rest) = (d / 365, d % 365);
        if rest == 0 {
            format!("{y}y")
        } else {
            format!("{y}y{rest}d")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_kubectl() {
        for (seconds, want) in [
            (-5, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (200, "3m20s"),
            (599, "9m59s"),
            (600, "10m"),
            (3 * 3600 - 1, "179m"),
            (3 * 3600, "3h"),
            (5 * 3600 + 12 * 60, "5h12m"),
            (30 * 3600, "30h"),
            (48 * 3600, "2d"),
            (76 * 3600, "3d4h"),
            (24 * 86_400, "24d"),
            (730 * 86_400, "2y"),
            (760 * 86_400, "2y30d"),
        ] {
            assert_eq!(age(seconds), want, "{seconds}");
        }
    }

    #[test]
    fn columns_align_and_empty_cells_show_a_dash() {
        let mut t = Table::new(vec!["NAME", "READY", "MESSAGE"]);
        t.push(vec!["a".into(), "True".into(), String::new()]);
        t.push(vec!["longer-name".into(), "False".into(), "apply failed".into()]);
        assert_eq!(
            t.render(false),
            "NAME          READY   MESSAGE\n\
             a             True    -\n\
             longer-name   False   apply failed\n"
        );
    }

    #[test]
    fn colour_marks_state_words_only_and_keeps_alignment() {
        let mut t = Table::new(vec!["READY", "NAME"]);
        t.push(vec!["True".into(), "x".into()]);
        t.push(vec!["False".into(), "True".into()]);
        assert_eq!(
            t.render(true),
            "READY   NAME\n\x1b[32mTrue\x1b[0m    x\n\x1b[31mFalse\x1b[0m   \x1b[32mTrue\x1b[0m\n"
        );
    }

    #[test]
    fn watched_rows_keep_the_first_tables_widths() {
        let mut t = Table::new(vec!["NAME", "READY"]);
        t.push(vec!["a".into(), "True".into()]);
        assert_eq!(t.render_rows(&[6, 5], false), "a        True\n");
    }

    #[test]
    fn one_line_flattens_and_cuts() {
        assert_eq!(one_line("a\n  b\tc", None), "a b c");
        assert_eq!(one_line("abcdef", Some(4)), "abc…");
        assert_eq!(one_line("abcd", Some(4)), "abcd");
    }
}
