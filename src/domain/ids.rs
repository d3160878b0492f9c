//! The ids and tokens that cross modules, each a type of its own.
//!
//! A loan's id and a member's id are both `bigint`s, and so is a fencing token: as bare `i64`s
//! one can be passed where another is wanted and nothing notices until the wrong rows change.
//! As types they cannot. Each is transparent to the database (`sqlx::Type`) and to JSON
//! (`serde`), so no SQL and no document changes: a field that carries one is annotated
//! `#[schema(value_type = i64)]` (or `String` for a task name) so the OpenAPI document still
//! shows the plain type. A query macro reads them through `From` and binds them as `id.0` (the
//! column's own type, which the macro checks).

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// An id or token that is an `i64` in the database and in JSON.
macro_rules! integer_newtype {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, sqlx::Type)]
        #[serde(transparent)]
        #[sqlx(transparent)]
        pub struct $name(pub i64);

        impl From<i64> for $name {
            fn from(value: i64) -> Self {
                Self(value)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

integer_newtype!(
    /// A loan's id (`loan.id`).
    LoanId
);

integer_newtype!(
    /// A member's id (`member.id`).
    MemberId
);

integer_newtype!(
    /// The number a lock grant carries (CONTRACT §2): each grant of a task's lock gets a higher
    /// one than any before it, and a write is refused unless it carries the newest.
    FencingToken
);

/// Who holds a lock: a random id drawn for each grant, so a release or renewal by a holder that
/// lost the lock matches nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, sqlx::Type)]
#[serde(transparent)]
#[sqlx(transparent)]
pub struct OwnerToken(pub Uuid);

impl OwnerToken {
    /// A new random owner token.
    pub fn random() -> Self {
        Self(Uuid::new_v4())
    }
}

impl From<Uuid> for OwnerToken {
    fn from(value: Uuid) -> Self {
        Self(value)
    }
}

impl fmt::Display for OwnerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A scheduled task's name: the key of its lock, executions, attempts, alerts and audits.
/// A `Cow` so that the service's own names are constants ([`crate::domain::SETTLE_FINES`]) and a
/// name read back from a row is owned.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TaskName(Cow<'static, str>);

impl TaskName {
    /// A name known when the program is written.
    pub const fn from_static(name: &'static str) -> Self {
        Self(Cow::Borrowed(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<String> for TaskName {
    fn from(value: String) -> Self {
        Self(Cow::Owned(value))
    }
}

impl From<&str> for TaskName {
    fn from(value: &str) -> Self {
        Self(Cow::Owned(value.to_owned()))
    }
}

impl fmt::Display for TaskName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl sqlx::Type<sqlx::Postgres> for TaskName {
    fn type_info() -> sqlx::postgres::PgTypeInfo {
        <&str as sqlx::Type<sqlx::Postgres>>::type_info()
    }

    fn compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
        <&str as sqlx::Type<sqlx::Postgres>>::compatible(ty)
    }
}

impl sqlx::Encode<'_, sqlx::Postgres> for TaskName {
    fn encode_by_ref(
        &self,
        buf: &mut sqlx::postgres::PgArgumentBuffer,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        <&str as sqlx::Encode<sqlx::Postgres>>::encode(self.as_str(), buf)
    }
}

impl<'r> sqlx::Decode<'r, sqlx::Postgres> for TaskName {
    fn decode(value: sqlx::postgres::PgValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        Ok(Self::from(<String as sqlx::Decode<sqlx::Postgres>>::decode(value)?))
    }
}
