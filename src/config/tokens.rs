//! API tokens and their roles, from `FINESETTLE_API_TOKENS` (`role=token,role=token`).
//!
//! Tokens are kept only as SHA-256 digests and compared in constant time, so neither a log line
//! nor the time a comparison takes tells anything about a token.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// What a caller may do. Reads need any role, writes `librarian` or `admin`, jobs and locks `admin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Reader,
    Librarian,
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Reader => "reader",
            Role::Librarian => "librarian",
            Role::Admin => "admin",
        }
    }

    fn parse(s: &str) -> Option<Role> {
        match s {
            "reader" => Some(Role::Reader),
            "librarian" => Some(Role::Librarian),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }
}

#[derive(Clone, Default)]
pub struct ApiTokens {
    entries: Vec<(Role, [u8; 32])>,
}

/// Never prints a token, not even its digest.
impl std::fmt::Debug for ApiTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let roles: Vec<&str> = self.entries.iter().map(|(r, _)| r.as_str()).collect();
        f.debug_struct("ApiTokens").field("roles", &roles).finish()
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenParseError {
    #[error("entry {0} is not role=token")]
    Shape(usize),
    #[error("entry {0} has an unknown role")]
    Role(usize),
    #[error("entry {0} has a token shorter than 16 or longer than 256 characters, or with spaces")]
    Token(usize),
}

impl ApiTokens {
    pub fn parse(spec: &str) -> Result<Self, TokenParseError> {
        let mut tokens = ApiTokens::default();
        for (i, entry) in spec.split(',').map(str::trim).filter(|e| !e.is_empty()).enumerate() {
            let (role, token) = entry.split_once('=').ok_or(TokenParseError::Shape(i + 1))?;
            let role = Role::parse(role.trim()).ok_or(TokenParseError::Role(i + 1))?;
            let token = token.trim();
            let visible = token.chars().all(|c| c.is_ascii_graphic());
            if !(16..=256).contains(&token.len()) || !visible {
                return Err(TokenParseError::Token(i + 1));
            }
            tokens.add(role, token);
        }
        Ok(tokens)
    }

    pub fn add(&mut self, role: Role, token: &str) {
        self.entries.push((role, digest(token)));
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The role of `presented`, comparing against every configured token in constant time.
    pub fn role_of(&self, presented: &str) -> Option<Role> {
        let presented = digest(presented);
        let mut found = None;
        for (role, known) in &self.entries {
            if bool::from(known.ct_eq(&presented)) {
                found = Some(found.map_or(*role, |r: Role| r.max(*role)));
            }
        }
        found
    }

    /// A fresh random token (two v4 UUIDs: 244 random bits).
    pub fn generate_token() -> String {
        format!("fs_{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_roles_and_finds_them() {
        let t = ApiTokens::parse("admin=aaaaaaaaaaaaaaaa, librarian=bbbbbbbbbbbbbbbb,reader=cccccccccccccccc").unwrap();
        assert_eq!(t.role_of("aaaaaaaaaaaaaaaa"), Some(Role::Admin));
        assert_eq!(t.role_of("bbbbbbbbbbbbbbbb"), Some(Role::Librarian));
        assert_eq!(t.role_of("cccccccccccccccc"), Some(Role::Reader));
        assert_eq!(t.role_of("dddddddddddddddd"), None);
        assert_eq!(t.role_of(""), None);
    }

    #[test]
    fn rejects_bad_entries() {
        assert_eq!(ApiTokens::parse("admin").unwrap_err(), TokenParseError::Shape(1));
        assert_eq!(
            ApiTokens::parse("root=aaaaaaaaaaaaaaaa").unwrap_err(),
            TokenParseError::Role(1)
        );
        assert_eq!(ApiTokens::parse("admin=short").unwrap_err(), TokenParseError::Token(1));
        assert!(ApiTokens::parse("").unwrap().is_empty());
    }

    #[test]
    fn debug_never_shows_tokens() {
        let t = ApiTokens::parse("admin=secretsecretsecret").unwrap();
        assert!(!format!("{t:?}").contains("secret"));
    }
}
