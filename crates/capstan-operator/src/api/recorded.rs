//! A status field stored as text and read back typed: text no version of capstan wrote (a
//! hand edit, a newer version) is kept as [`Recorded::Unknown`], never read as some other
//! value, so a controller can refuse to act on it instead of guessing.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A value with a text form in the status.
pub trait StatusText: Sized {
    /// The text stored in the status.
    fn text(&self) -> String;
    /// The value of a stored text; `None` when the text is none of the known values.
    fn from_text(text: &str) -> Option<Self>;
}

/// A recorded status value: a known one, or the text as found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recorded<T> {
    Known(T),
    Unknown(String),
}

impl<T: StatusText> Recorded<T> {
    /// The value of `text`, `Unknown` when it is none.
    pub fn read(text: &str) -> Recorded<T> {
        T::from_text(text).map_or_else(|| Recorded::Unknown(text.to_string()), Recorded::Known)
    }

    /// Nothing recorded (an absent or empty field): not written back.
    pub fn is_unset(&self) -> bool {
        matches!(self, Recorded::Unknown(text) if text.is_empty())
    }

    /// The known value, `None` for unknown text.
    pub fn known(&self) -> Option<&T> {
        match self {
            Recorded::Known(value) => Some(value),
            Recorded::Unknown(_) => None,
        }
    }
}

/// An absent field is unknown (`""`): nothing says which value it had.
impl<T> Default for Recorded<T> {
    fn default() -> Recorded<T> {
        Recorded::Unknown(String::new())
    }
}

/// The value of a stored text (see [`Recorded::read`]).
impl<T: StatusText> From<&str> for Recorded<T> {
    fn from(text: &str) -> Recorded<T> {
        Recorded::read(text)
    }
}

impl<T: StatusText> fmt::Display for Recorded<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Recorded::Known(value) => f.write_str(&value.text()),
            Recorded::Unknown(text) => f.write_str(text),
        }
    }
}

impl<T: StatusText> Serialize for Recorded<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de, T: StatusText> Deserialize<'de> for Recorded<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Recorded<T>, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(Recorded::read(&text))
    }
}
