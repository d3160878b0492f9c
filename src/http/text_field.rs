//! The checks of a text field a person writes (a name, a title, a reason), with the messages a
//! client reads in a 422. What counts as visible is [`crate::domain::text`]'s rule.

use super::error::FieldError;
use crate::domain::text;

/// The control characters a text field accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Controls {
    /// None: a name or a title is one line. (PostgreSQL also refuses NUL in text.)
    None,
    /// Line breaks and tabs, which are text in a longer explanation; no other.
    LineBreaksAndTabs,
}

/// `value` without its surrounding spaces, if that has 1 to `max_chars` characters, at least one
/// visible, and no control character but those `controls` accepts; otherwise the first of these
/// rules it breaks, as an error of `field`.
pub fn text_field<'a>(
    field: &str,
    value: &'a str,
    max_chars: usize,
    controls: Controls,
) -> Result<&'a str, FieldError> {
    let value = value.trim();
    let count = value.chars().count();
    if count == 0 || count > max_chars {
        return Err(FieldError::new(field, format!("must be 1 to {max_chars} characters")));
    }
    let refused =
        |c: char| c.is_control() && !(controls == Controls::LineBreaksAndTabs && matches!(c, '\n' | '\r' | '\t'));
    if value.chars().any(refused) {
        let message = match controls {
            Controls::None => "must not contain control characters",
            Controls::LineBreaksAndTabs => "must not contain control characters other than line breaks and tabs",
        };
        return Err(FieldError::new(field, message));
    }
    if !text::has_visible_char(value) {
        return Err(FieldError::new(field, "must contain a visible character"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_with_its_message() {
        let cases: [(&str, usize, Controls, Result<&str, &str>); 9] = [
            ("  Ada  ", 3, Controls::None, Ok("Ada")),
            ("李李", 2, Controls::None, Ok("李李")),
            ("Adam", 3, Controls::None, Err("must be 1 to 3 characters")),
            ("   ", 3, Controls::None, Err("must be 1 to 3 characters")),
            ("a\nb", 10, Controls::None, Err("must not contain control characters")),
            ("a\r\n\tb", 10, Controls::LineBreaksAndTabs, Ok("a\r\n\tb")),
            (
                "a\0b",
                10,
                Controls::LineBreaksAndTabs,
                Err("must not contain control characters other than line breaks and tabs"),
            ),
            (
                "\u{200b}\u{202e}",
                10,
                Controls::None,
                Err("must contain a visible character"),
            ),
            ("\u{200b}x", 10, Controls::None, Ok("\u{200b}x")),
        ];
        for (value, max_chars, controls, expected) in cases {
            let checked = text_field("f", value, max_chars, controls).map_err(|e| e.message);
            assert_eq!(checked, expected.map_err(str::to_owned), "{value:?}");
        }
    }
}
