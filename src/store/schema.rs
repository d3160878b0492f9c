//! Which releases can serve this database: the guard every command passes before it migrates.
//!
//! Replicas are upgraded one at a time, so during a roll the previous release keeps serving, and
//! may restart, against a schema the next release has already migrated. Migrations are
//! expand-then-contract (docs/DESIGN.md, "Migrations and releases"): a release only adds to the
//! schema and keeps every name the previous release reads or writes, so a release that meets
//! migrations it does not know (a newer release's expansion) serves on. What it cannot serve is a
//! schema whose contract step removed something it relied on. That step records the oldest
//! release that can still serve the schema in `schema_compat.oldest_release`, and an older
//! release refuses to start, naming both.
//!
//! sqlx's own check (every applied migration must be known) refuses any newer schema, whatever
//! the change was, so the migrator runs with `ignore_missing` and this guard decides instead.
//!
//! A contract migration is one whose file is named `<version>_contract_<what>.sql`: every command
//! leaves it out ([`Step::Expand`]) except `finesettle migrate --contract` ([`Step::Contract`]).

use std::collections::BTreeSet;
use std::sync::OnceLock;

use semver::Version;
use sqlx::PgPool;
use sqlx::migrate::{Migration, Migrator};

use super::database::MIGRATOR;

/// This release, as `Cargo.toml` names it.
pub const RELEASE: &str = env!("CARGO_PKG_VERSION");

/// Which migrations a command applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Expand migrations only: `serve` and every other command, while a roll may be under way.
    Expand,
    /// Contract migrations too: `finesettle migrate --contract`, once every replica runs this
    /// release.
    Contract,
}

/// Whether `migration` is a contract migration (`<version>_contract_<what>.sql`).
pub fn is_contract(migration: &Migration) -> bool {
    migration.description.starts_with("contract ")
}

/// The schema this release brings and runs against: its newest expand migration. It brings an
/// older database up to it at start, and serves a newer one unless a contract step forbids.
pub fn schema() -> i64 {
    schema_of(&MIGRATOR)
}

/// The newest expand migration of `migrator` (0 when it has none).
pub fn schema_of(migrator: &Migrator) -> i64 {
    migrator
        .iter()
        .filter(|m| !is_contract(m))
        .map(|m| m.version)
        .max()
        .unwrap_or(0)
}

/// `0.2.0 (schema 20261205000050)`: what `finesettle --version` prints after the name.
pub fn version_line() -> &'static str {
    static LINE: OnceLock<String> = OnceLock::new();
    LINE.get_or_init(|| format!("{RELEASE} (schema {})", schema()))
}

/// Why a release refused a database.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error(
        "finesettle {release} cannot serve this database: its schema ({schema}) needs finesettle \
         {oldest_release} or newer, because a contract step removed what {release} relies on; \
         run finesettle {oldest_release} or newer"
    )]
    TooOld {
        release: String,
        schema: i64,
        oldest_release: Version,
    },
    #[error(
        "finesettle {release} does not know the migrations {unknown:?} applied to this database \
         (schema {schema}), and the database does not record which releases can serve it; \
         run the release that applied them"
    )]
    Unrecorded {
        release: String,
        schema: i64,
        unknown: Vec<i64>,
    },
    #[error("schema_compat.oldest_release is not a version: {0:?}")]
    BadRecord(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// What the database says about its schema.
#[derive(Debug)]
pub struct Found {
    /// The newest migration applied (0 on a fresh database).
    pub schema: i64,
    /// Applied migrations `migrator` does not have: a newer release's.
    pub unknown: Vec<i64>,
    /// `schema_compat.oldest_release`, when the table exists.
    pub oldest_release: Option<Version>,
}

/// Reads what `migrator`'s release needs to know before it touches the schema.
pub async fn inspect(pool: &PgPool, migrator: &Migrator) -> Result<Found, SchemaError> {
    let applied: Vec<i64> = if table_exists(pool, "_sqlx_migrations").await? {
        sqlx::query_scalar("select version from _sqlx_migrations where success order by version")
            .fetch_all(pool)
            .await?
    } else {
        Vec::new()
    };
    let known: BTreeSet<i64> = migrator.iter().map(|m| m.version).collect();
    let oldest_release = if table_exists(pool, "schema_compat").await? {
        let text: Option<String> = sqlx::query_scalar("select oldest_release from schema_compat limit 1")
            .fetch_optional(pool)
            .await?;
        text.map(|text| Version::parse(&text).map_err(|_| SchemaError::BadRecord(text)))
            .transpose()?
    } else {
        None
    };
    Ok(Found {
        schema: applied.last().copied().unwrap_or(0),
        unknown: applied.into_iter().filter(|v| !known.contains(v)).collect(),
        oldest_release,
    })
}

/// Whether `release` may serve what [`inspect`] found.
pub fn check(release: &str, found: &Found) -> Result<(), SchemaError> {
    let own = Version::parse(release).map_err(|_| SchemaError::BadRecord(release.to_owned()))?;
    match &found.oldest_release {
        Some(oldest) if own < *oldest => Err(SchemaError::TooOld {
            release: release.to_owned(),
            schema: found.schema,
            oldest_release: oldest.clone(),
        }),
        None if !found.unknown.is_empty() => Err(SchemaError::Unrecorded {
            release: release.to_owned(),
            schema: found.schema,
            unknown: found.unknown.clone(),
        }),
        _ => Ok(()),
    }
}

/// Refuses a schema this release cannot serve, then applies this release's migrations of `step`
/// that are missing, leaving a newer release's alone.
pub async fn guard_and_migrate(pool: &PgPool, migrator: &Migrator, step: Step) -> anyhow::Result<()> {
    let found = inspect(pool, migrator).await?;
    check(RELEASE, &found)?;
    if !found.unknown.is_empty() {
        tracing::warn!(
            release = RELEASE,
            schema = found.schema,
            unknown = ?found.unknown,
            "this database has migrations of a newer release (an expansion); serving on"
        );
    }
    let migrations = migrator
        .iter()
        .filter(|m| step == Step::Contract || !is_contract(m))
        .cloned()
        .collect();
    let mut tolerant = Migrator::with_migrations(migrations);
    tolerant.set_ignore_missing(true);
    tolerant.run(pool).await?;
    Ok(())
}

async fn table_exists(pool: &PgPool, name: &str) -> sqlx::Result<bool> {
    sqlx::query_scalar("select to_regclass($1) is not null")
        .bind(name)
        .fetch_one(pool)
        .await
}
