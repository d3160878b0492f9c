//! The container images the tests start, as `.env` names them (the one place the project's image
//! tags are written; compose and `scripts/local-images` read the same file).

/// `.env`, read when the tests are compiled.
const TAGS: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/.env"));

/// The image `key` names in `.env`, split into name and tag (`postgres:15-bookworm` gives
/// `("postgres", "15-bookworm")`).
pub fn image(key: &str) -> (&'static str, &'static str) {
    let reference = TAGS
        .lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_else(|| panic!(".env names no {key}"))
        .trim();
    reference
        .rsplit_once(':')
        .unwrap_or_else(|| panic!("{key}={reference} in .env has no tag"))
}

pub fn postgres() -> (&'static str, &'static str) {
    image("POSTGRES_IMAGE")
}

pub fn redis() -> (&'static str, &'static str) {
    image("REDIS_IMAGE")
}

/// The service's own image, built by `scripts/build-image`.
pub fn finesettle() -> (&'static str, &'static str) {
    image("FINESETTLE_IMAGE")
}
