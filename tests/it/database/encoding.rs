//! A database whose encoding is not UTF8 is refused at start, before anything is created in it.

use sqlx::{Connection, PgConnection};

use super::run_sql_in;
use crate::common::database::TestDatabase;
use crate::common::test_settings;

#[tokio::test]
async fn a_sql_ascii_database_is_refused_at_start_and_nothing_is_created() {
    let database = TestDatabase::create().await;
    // The test database again, as SQL_ASCII (in which length() counts bytes).
    let name = database.name();
    for sql in [
        format!("drop database \"{name}\" with (force)"),
        format!("create database \"{name}\" encoding 'SQL_ASCII' template template0 lc_collate 'C' lc_ctype 'C'"),
    ] {
        run_sql_in(database.maintenance_url(), &sql).await;
    }

    let refused = finesettle::startup::Application::build(test_settings(database.url())).await;
    let message = format!("{:#}", refused.err().expect("the start is refused"));
    assert!(message.contains("SQL_ASCII") && message.contains("UTF8"), "{message}");
    assert!(message.contains("template0"), "says how to create one: {message}");

    let mut conn = PgConnection::connect(database.url()).await.unwrap();
    let relations: i64 = sqlx::query_scalar(
        "select count(*) from pg_class c join pg_namespace n on n.oid = c.relnamespace \
         where n.nspname not in ('pg_catalog', 'information_schema', 'pg_toast')",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(relations, 0, "nothing was created");
}
