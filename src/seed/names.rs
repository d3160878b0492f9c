//! Names, e-mail addresses, titles and ISBNs for the demo library, from small built-in word lists.
//!
//! E-mail addresses carry the member's number, so they are unique (the schema requires it) however
//! many members are generated, and they use the `example.*` domains reserved for documentation,
//! so no seeded address can reach a real person.

use super::rng::Rng;

const FIRST_NAMES: &[&str] = &[
    "Ada", "Aiko", "Alan", "Amara", "Anders", "Ayesha", "Bea", "Bruno", "Carmen", "Chen", "Dara", "Diego", "Elif",
    "Emeka", "Erik", "Fatima", "Grace", "Hana", "Hiro", "Ines", "Ivan", "Jamal", "Jia", "Kai", "Kofi", "Lars", "Layla",
    "Lina", "Luca", "Mei", "Mateo", "Nadia", "Nia", "Noor", "Olga", "Omar", "Paulo", "Priya", "Quinn", "Rosa", "Rahul",
    "Sakura", "Sofia", "Tariq", "Thandi", "Tomas", "Uma", "Vera", "Wei", "Yara", "Yusuf", "Zainab", "Zoe",
];

const LAST_NAMES: &[&str] = &[
    "Abe", "Adeyemi", "Alvarez", "Andersen", "Bauer", "Chandra", "Chen", "Costa", "Dubois", "Eriksen", "Fischer",
    "Garcia", "Gupta", "Haddad", "Hoang", "Ibrahim", "Ivanova", "Jensen", "Kim", "Kowalski", "Lee", "Liu", "Lopez",
    "Mbeki", "Moreau", "Murphy", "Nakamura", "Nguyen", "Novak", "Okafor", "Olsen", "Park", "Petrov", "Quispe", "Rossi",
    "Sato", "Schmidt", "Silva", "Singh", "Smith", "Tanaka", "Torres", "Usman", "Varga", "Wang", "Weber", "Yilmaz",
    "Zhang",
];

const DOMAINS: &[&str] = &["example.org", "example.com", "example.net"];

const ADJECTIVES: &[&str] = &[
    "Silent",
    "Hidden",
    "Last",
    "Golden",
    "Broken",
    "Distant",
    "Forgotten",
    "Quiet",
    "Burning",
    "Northern",
    "Secret",
    "Winter",
    "Crimson",
    "Endless",
    "Paper",
    "Glass",
    "Wandering",
    "Little",
    "Salt",
    "Midnight",
];

const NOUNS: &[&str] = &[
    "River",
    "Garden",
    "Lighthouse",
    "Orchard",
    "Kingdom",
    "Archive",
    "Harbour",
    "Mountain",
    "Library",
    "Compass",
    "Letters",
    "Bridge",
    "Forest",
    "Island",
    "Clockmaker",
    "Cartographer",
    "Tide",
    "Observatory",
    "Station",
    "Atlas",
];

const SUBJECTS: &[&str] = &[
    "Bread",
    "Maps",
    "Clocks",
    "Rivers",
    "Salt",
    "Paper",
    "Bees",
    "Silk",
    "Numbers",
    "Glass",
    "Tea",
    "Bridges",
    "Printing",
    "Weather",
    "Ships",
    "Mathematics",
    "Music",
    "Gardens",
    "Stars",
    "Libraries",
];

/// A member's display name and a unique e-mail address; `number` is the member's 1-based number.
pub fn member(rng: &mut Rng, number: usize) -> (String, String) {
    let first = rng.pick(FIRST_NAMES);
    let last = rng.pick(LAST_NAMES);
    let domain = rng.pick(DOMAINS);
    let email = format!("{}.{}.{number}@{domain}", first.to_lowercase(), last.to_lowercase());
    (format!("{first} {last}"), email)
}

/// A plausible title: "The Silent River", "A Short History of Maps", "Letters from the Harbour".
pub fn book_title(rng: &mut Rng) -> String {
    match rng.below(4) {
        0 => format!("The {} {}", rng.pick(ADJECTIVES), rng.pick(NOUNS)),
        1 => format!("A Short History of {}", rng.pick(SUBJECTS)),
        2 => format!(
            "{} from the {}",
            rng.pick(&["Letters", "Notes", "Songs", "Voices"]),
            rng.pick(NOUNS)
        ),
        _ => format!("{} and {}", rng.pick(SUBJECTS), rng.pick(SUBJECTS)),
    }
}

/// A random ISBN-13 in the 978 prefix with a valid check digit.
pub fn isbn13(rng: &mut Rng) -> String {
    let mut digits = [0u8; 13];
    digits[..3].copy_from_slice(&[9, 7, 8]);
    for digit in &mut digits[3..12] {
        *digit = rng.below(10) as u8;
    }
    digits[12] = isbn13_check_digit(&digits[..12]);
    digits.iter().map(|d| char::from(b'0' + d)).collect()
}

/// The check digit that makes the weighted sum (weights 1, 3, 1, 3, ...) a multiple of 10.
fn isbn13_check_digit(first_twelve: &[u8]) -> u8 {
    let sum: u32 = first_twelve
        .iter()
        .zip([1u32, 3].into_iter().cycle())
        .map(|(&d, w)| u32::from(d) * w)
        .sum();
    ((10 - sum % 10) % 10) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_digit_matches_a_published_isbn() {
        // ISBN 978-0-306-40615-7.
        assert_eq!(isbn13_check_digit(&[9, 7, 8, 0, 3, 0, 6, 4, 0, 6, 1, 5]), 7);
    }

    #[test]
    fn generated_isbns_are_thirteen_digits_with_a_valid_check_digit() {
        let mut rng = Rng::new(1);
        for _ in 0..1_000 {
            let isbn = isbn13(&mut rng);
            assert_eq!(isbn.len(), 13);
            let digits: Vec<u32> = isbn.chars().map(|c| c.to_digit(10).unwrap()).collect();
            let sum: u32 = digits.iter().zip([1, 3].into_iter().cycle()).map(|(d, w)| d * w).sum();
            assert_eq!(sum % 10, 0, "{isbn}");
        }
    }

    #[test]
    fn emails_are_unique_by_number_and_use_reserved_domains() {
        let mut rng = Rng::new(1);
        let mut seen = std::collections::HashSet::new();
        for number in 1..=5_000 {
            let (name, email) = member(&mut rng, number);
            assert!(!name.trim().is_empty());
            assert!(seen.insert(email.clone()), "{email}");
            assert!(DOMAINS.iter().any(|d| email.ends_with(&format!("@{d}"))), "{email}");
        }
    }
}
