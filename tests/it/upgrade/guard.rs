//! The schema guard (`store::schema`): a release serves a schema that a newer release expanded,
//! and refuses, naming both, one whose contract step needs a newer release.

use std::time::Duration;

use finesettle::store::schema::{self, RELEASE, Step, guard_and_migrate};
use sqlx::PgPool;
use sqlx::SqlSafeStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};

use crate::common::process::Finesettle;
use crate::common::seed::migrated_db;

/// A migration no release of this repository has: a newer release's.
const NEWER_MIGRATION: i64 = 20991231000001;

/// Records [`NEWER_MIGRATION`] as applied, as a newer release's `serve` would have.
async fn apply_a_newer_migration(pool: &PgPool) {
    sqlx::query(
        "insert into _sqlx_migrations (version, description, success, checksum, execution_time) \
         values ($1, 'a newer release', true, '\\x00', 0)",
    )
    .bind(NEWER_MIGRATION)
    .execute(pool)
    .await
    .unwrap();
}

/// Records `release` as the oldest that can serve the schema, as a migration would.
async fn set_oldest_release(pool: &PgPool, release: &str) {
    // The table as `migrations/20261205000050_schema_compat.sql` creates it.
    sqlx::raw_sql(
        "create table if not exists schema_compat (
            id boolean primary key default true constraint schema_compat_one_row check (id),
            oldest_release text not null
        )",
    )
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(
        "insert into schema_compat (oldest_release) values ($1) \
         on conflict (id) do update set oldest_release = excluded.oldest_release",
    )
    .bind(release)
    .execute(pool)
    .await
    .unwrap();
}

#[tokio::test]
async fn a_release_serves_a_schema_a_newer_release_expanded() {
    let (_database, pool) = migrated_db().await;
    apply_a_newer_migration(&pool).await;
    set_oldest_release(&pool, RELEASE).await;

    // What `serve` and every other command do first: sqlx alone would refuse ("migration ... was
    // previously applied but is missing in the resolved migrations").
    finesettle::store::database::migrate(&pool)
        .await
        .expect("a newer release's expansion is served");
}

#[tokio::test]
async fn a_release_refuses_a_schema_whose_contract_step_needs_a_newer_one() {
    let (database, pool) = migrated_db().await;
    apply_a_newer_migration(&pool).await;
    set_oldest_release(&pool, "99.0.0").await;

    let refused = Finesettle::new(database.url(), "old-replica")
        .run(&["serve"], Duration::from_secs(30))
        .await;
    refused.assert_failure();
    let expected = format!(
        "finesettle {RELEASE} cannot serve this database: its schema ({NEWER_MIGRATION}) needs \
         finesettle 99.0.0 or newer"
    );
    assert!(refused.stderr.contains(&expected), "{}", refused.output());
}

#[tokio::test]
async fn a_release_refuses_migrations_it_does_not_know_when_nothing_says_who_can_serve_them() {
    let (_database, pool) = migrated_db().await;
    sqlx::raw_sql("drop table if exists schema_compat")
        .execute(&pool)
        .await
        .unwrap();
    apply_a_newer_migration(&pool).await;

    let error = finesettle::store::database::migrate(&pool)
        .await
        .expect_err("unknown migrations without a record are refused");
    let message = format!("{error:#}");
    assert!(
        message.contains(&format!(
            "finesettle {RELEASE} does not know the migrations [{NEWER_MIGRATION}]"
        )),
        "{message}"
    );
}

#[tokio::test]
async fn version_names_the_release_and_the_schema_it_brings() {
    let (database, pool) = migrated_db().await;
    let printed = Finesettle::new(database.url(), "operator")
        .run(&["--version"], Duration::from_secs(30))
        .await;
    printed.assert_success();
    let applied: i64 = sqlx::query_scalar("select max(version) from _sqlx_migrations")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(
        printed.stdout.trim(),
        format!("finesettle {RELEASE} (schema {applied})")
    );
}

/// A contract migration waits for `finesettle migrate --contract`: `serve`, plain `migrate` and
/// every other command leave it out, so the previous release keeps its schema through the roll.
/// Once applied, it names the oldest release that can serve the schema, and an older one is
/// refused.
#[tokio::test]
async fn a_contract_migration_waits_for_the_contract_step() {
    let (_database, pool) = migrated_db().await;
    let contract = Migration::new(
        NEWER_MIGRATION,
        "contract drop what the previous release read".into(),
        MigrationType::Simple,
        sqlx::AssertSqlSafe(format!(
            "alter table book drop column isbn; update schema_compat set oldest_release = '{RELEASE}'"
        ))
        .into_sql_str(),
        false,
    );
    let mut migrations: Vec<Migration> = finesettle::store::database::MIGRATOR.iter().cloned().collect();
    migrations.push(contract);
    let migrator = Migrator::with_migrations(migrations);
    let applied = async || -> Vec<i64> {
        sqlx::query_scalar("select version from _sqlx_migrations where version = $1")
            .bind(NEWER_MIGRATION)
            .fetch_all(&pool)
            .await
            .unwrap()
    };

    guard_and_migrate(&pool, &migrator, Step::Expand).await.unwrap();
    assert!(
        applied().await.is_empty(),
        "an expand step applied a contract migration"
    );
    assert_eq!(schema::schema_of(&migrator), schema::schema());

    guard_and_migrate(&pool, &migrator, Step::Contract).await.unwrap();
    assert_eq!(applied().await, [NEWER_MIGRATION]);
    let found = schema::inspect(&pool, &migrator).await.unwrap();
    schema::check(RELEASE, &found).expect("the release that contracted serves on");
    let refused = schema::check("0.1.1", &found).expect_err("the previous release is refused");
    assert!(
        refused
            .to_string()
            .starts_with(&format!("finesettle 0.1.1 cannot serve this database: its schema ({NEWER_MIGRATION}) needs finesettle {RELEASE} or newer")),
        "{refused}"
    );
}
