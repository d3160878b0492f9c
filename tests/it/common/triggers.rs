//! Triggers a test installs in its own database, to put a fault, a delay or a pause inside the
//! service's transactions where no hook of the code reaches.

use sqlx::PgPool;

/// Creates the PL/pgSQL trigger function `name`, whose body is `body` (the statements between
/// `begin` and `end`), and the trigger `name` that runs it: `on` is everything between the
/// trigger's name and `execute function` (`before insert on ledger_entry for each row`).
pub async fn create_trigger(pool: &PgPool, name: &str, on: &str, body: &str) {
    let sql = format!(
        "create function {name}() returns trigger language plpgsql as $$ begin {body} end; $$; \
         create trigger {name} {on} execute function {name}();"
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(pool).await.unwrap();
}
