//! What counts as text a person wrote: names, titles and reasons with at least one visible
//! character, and e-mail addresses by the HTML `input type=email` rule.

/// Whether `text` has a character that shows: not a space, a control character, or one of the
/// characters that render as nothing (zero-width spaces and joiners, direction marks and
/// overrides, variation selectors, fillers). A name made only of `\u{200b}` or `\u{202e}` looks
/// empty in every list and cannot be told from another.
pub fn has_visible_char(text: &str) -> bool {
    text.chars()
        .any(|c| !(c.is_whitespace() || c.is_control() || renders_as_nothing(c)))
}

/// Format characters (Unicode category Cf) and the other code points that render as blank.
fn renders_as_nothing(c: char) -> bool {
    matches!(c,
        '\u{00AD}'                      // soft hyphen
        | '\u{034F}'                    // combining grapheme joiner
        | '\u{061C}'                    // Arabic letter mark
        | '\u{115F}' | '\u{1160}'       // Hangul fillers
        | '\u{17B4}' | '\u{17B5}'       // Khmer inherent vowels
        | '\u{180B}'..='\u{180F}'       // Mongolian variation selectors and vowel separator
        | '\u{200B}'..='\u{200F}'       // zero-width space, joiners, direction marks
        | '\u{202A}'..='\u{202E}'       // direction embeddings and overrides
        | '\u{2060}'..='\u{206F}'       // word joiner, invisible operators, direction isolates
        | '\u{2800}'                    // braille blank
        | '\u{3164}'                    // Hangul filler
        | '\u{FE00}'..='\u{FE0F}'       // variation selectors
        | '\u{FEFF}'                    // zero-width no-break space
        | '\u{FFA0}'                    // halfwidth Hangul filler
        | '\u{FFF9}'..='\u{FFFB}'       // interlinear annotation
        | '\u{1D173}'..='\u{1D17A}'     // musical formatting
        | '\u{E0000}'..='\u{E0FFF}'     // tags and variation selectors supplement
    )
}

/// The longest e-mail address accepted (the longest a mail path can carry).
pub const MAX_EMAIL_LEN: usize = 254;

/// Whether `email` is a valid e-mail address by the WHATWG HTML rule for `input type=email`:
/// a local part of letters, digits and ``.!#$%&'*+/=?^_`{|}~-``, an `@`, and a domain of
/// dot-separated labels of 1 to 63 letters, digits and hyphens, neither starting nor ending with a
/// hyphen. So `a@b..c`, `a@-b.c` and `a b@c.d` are refused.
pub fn is_email(email: &str) -> bool {
    let Some((local, domain)) = email.split_once('@') else {
        return false;
    };
    let local_ok = !local.is_empty()
        && local
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".!#$%&'*+/=?^_`{|}~-".contains(c));
    let domain_ok = domain.split('.').all(|label| {
        (1..=63).contains(&label.len())
            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    });
    email.len() <= MAX_EMAIL_LEN && local_ok && domain_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_only_text_is_not_text() {
        for blank in [
            "",
            " ",
            "\u{200b}",
            "\u{202e}",
            "\u{200b}\u{202e} \u{feff}",
            "\u{3164}\u{2800}",
            "\t\n",
        ] {
            assert!(!has_visible_char(blank), "{blank:?}");
        }
        for text in ["Ada", "\u{202e}Ada", "李", "é", "\u{200b}x", "0"] {
            assert!(has_visible_char(text), "{text:?}");
        }
    }

    #[test]
    fn e_mail_follows_the_html_rule() {
        for good in [
            "ada@example.org",
            "a.b+c@d-e.f",
            "x@localhost",
            "o'neil@example.ie",
            "a@b.c",
        ] {
            assert!(is_email(good), "{good}");
        }
        for bad in [
            "a@b..c",
            "a@.b",
            "a@b.",
            "a@-b.c",
            "a@b-.c",
            "@b.c",
            "a@",
            "a",
            "a b@c.d",
            "a@b@c",
            "a@b_c.d",
            "\u{200b}@b.c",
            "ä@b.c",
        ] {
            assert!(!is_email(bad), "{bad}");
        }
        let long_label = format!("a@{}.c", "b".repeat(64));
        assert!(!is_email(&long_label));
        let too_long = format!("{}@b.c", "a".repeat(MAX_EMAIL_LEN));
        assert!(!is_email(&too_long));
    }
}
