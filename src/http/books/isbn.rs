//! ISBN-10 and ISBN-13 check digits.
//!
//! A mistyped ISBN is caught here, at the door, rather than found later when a catalogue lookup
//! fails: both forms carry a check digit that detects any single wrong digit and most swaps.

/// The ISBN in `raw` without its separators (hyphens and spaces), with a lowercase `x` check
/// digit upper-cased; `None` unless it is an ISBN-10 or ISBN-13 with a valid check digit.
pub fn normalize_isbn(raw: &str) -> Option<String> {
    let isbn: String = raw
        .chars()
        .filter(|c| *c != '-' && *c != ' ')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    let valid = match isbn.len() {
        10 => isbn10_is_valid(isbn.as_bytes()),
        13 => isbn13_is_valid(isbn.as_bytes()),
        _ => false,
    };
    valid.then_some(isbn)
}

/// Weights 10 down to 1; the sum must be a multiple of 11. The check digit may be `X` (10).
fn isbn10_is_valid(digits: &[u8]) -> bool {
    let mut sum = 0;
    for (&c, weight) in digits.iter().zip((1..=10u32).rev()) {
        let value = match c {
            b'0'..=b'9' => u32::from(c - b'0'),
            b'X' if weight == 1 => 10,
            _ => return false,
        };
        sum += value * weight;
    }
    sum % 11 == 0
}

/// Weights alternate 1 and 3; the sum must be a multiple of 10.
fn isbn13_is_valid(digits: &[u8]) -> bool {
    let mut sum = 0;
    for (&c, weight) in digits.iter().zip([1u32, 3].into_iter().cycle()) {
        if !c.is_ascii_digit() {
            return false;
        }
        sum += u32::from(c - b'0') * weight;
    }
    sum % 10 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_valid_isbns_and_strips_separators() {
        assert_eq!(normalize_isbn("978-0-306-40615-7").as_deref(), Some("9780306406157"));
        assert_eq!(normalize_isbn("0 306 40615 2").as_deref(), Some("0306406152"));
        assert_eq!(normalize_isbn("080442957x").as_deref(), Some("080442957X"));
        assert_eq!(normalize_isbn("9791032305690").as_deref(), Some("9791032305690"));
    }

    #[test]
    fn rejects_wrong_check_digits_lengths_and_characters() {
        assert_eq!(normalize_isbn("978-0-306-40615-8"), None);
        assert_eq!(normalize_isbn("0306406153"), None);
        assert_eq!(normalize_isbn("X804429570"), None, "X only as the check digit");
        assert_eq!(normalize_isbn("97803064061"), None);
        assert_eq!(normalize_isbn(""), None);
        assert_eq!(
            normalize_isbn("978030640615７"),
            None,
            "a full-width digit is not a digit"
        );
        assert_eq!(
            normalize_isbn("978.0.306.40615.7"),
            None,
            "only hyphens and spaces are separators"
        );
    }

    #[test]
    fn any_single_wrong_digit_is_caught() {
        for valid in ["9780306406157", "0306406152"] {
            for position in 0..valid.len() {
                for digit in b'0'..=b'9' {
                    let mut bytes = valid.as_bytes().to_vec();
                    if bytes[position] == digit {
                        continue;
                    }
                    bytes[position] = digit;
                    let typo = String::from_utf8(bytes).unwrap();
                    assert_eq!(normalize_isbn(&typo), None, "{typo}");
                }
            }
        }
    }
}
