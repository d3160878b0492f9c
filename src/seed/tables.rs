//! The seed's own SQL: emptiness check, reset, and reading back the ids COPY generated.
//!
//! Kept apart from `store` because nothing else may empty the library: these statements exist
//! for the demo data set only.

use sqlx::PgConnection;

/// How full the library is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LibraryCounts {
    pub members: i64,
    pub books: i64,
    pub loans: i64,
}

impl LibraryCounts {
    pub fn is_empty(&self) -> bool {
        self.members == 0 && self.books == 0 && self.loans == 0
    }
}

/// Blocks other writers to the library until the seed commits, so that the emptiness checked
/// now still holds when the rows land and the generated ids follow each other. Readers go on.
pub async fn lock_library(conn: &mut PgConnection) -> sqlx::Result<()> {
    sqlx::raw_sql("lock table member, book, loan in exclusive mode")
        .execute(conn)
        .await?;
    Ok(())
}

/// Empties the business tables and restarts their ids. Job tables (locks, executions,
/// attempts, alerts) are left alone: they are the record of what ran.
pub async fn reset_library(conn: &mut PgConnection) -> sqlx::Result<()> {
    sqlx::raw_sql(
        "-- every table that refers to a loan, member or book goes with them
         truncate notification, ledger_entry, fine_record, loan_change, loan, book, member, idempotency_key
             restart identity",
    )
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn counts(conn: &mut PgConnection) -> sqlx::Result<LibraryCounts> {
    let row = sqlx::query!(
        r#"
        select (select count(*) from member) as "members!",
               (select count(*) from book) as "books!",
               (select count(*) from loan) as "loans!"
        "#
    )
    .fetch_one(conn)
    .await?;
    Ok(LibraryCounts {
        members: row.members,
        books: row.books,
        loans: row.loans,
    })
}

/// A table the seed copies rows into and then reads the generated ids of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdTable {
    Member,
    Book,
}

impl IdTable {
    pub fn name(self) -> &'static str {
        match self {
            IdTable::Member => "member",
            IdTable::Book => "book",
        }
    }

    /// The `COPY` of the columns the seed writes (the id and the rest take their defaults).
    pub fn copy_statement(self) -> &'static str {
        match self {
            IdTable::Member => "copy member (name, email, created_at) from stdin",
            IdTable::Book => "copy book (title, isbn, created_at) from stdin",
        }
    }
}

/// The highest id of `table` so far (0 when none): the rows copied next get larger ones.
pub async fn last_id(conn: &mut PgConnection, table: IdTable) -> sqlx::Result<i64> {
    match table {
        IdTable::Member => {
            sqlx::query_scalar!(r#"select coalesce(max(id), 0) as "id!" from member"#)
                .fetch_one(conn)
                .await
        }
        IdTable::Book => {
            sqlx::query_scalar!(r#"select coalesce(max(id), 0) as "id!" from book"#)
                .fetch_one(conn)
                .await
        }
    }
}

/// The ids of `table` above `after`, in order: the ids of the rows just copied, in the order
/// they were sent (the library is locked, so nobody else inserted meanwhile).
pub async fn ids_after(conn: &mut PgConnection, table: IdTable, after: i64) -> sqlx::Result<Vec<i64>> {
    match table {
        IdTable::Member => {
            sqlx::query_scalar!("select id from member where id > $1 order by id", after)
                .fetch_all(conn)
                .await
        }
        IdTable::Book => {
            sqlx::query_scalar!("select id from book where id > $1 order by id", after)
                .fetch_all(conn)
                .await
        }
    }
}

/// The statements that drop and re-add `loan`'s foreign keys, built by the database from its
/// own catalog (names quoted by `format('%I')`, definitions by `pg_get_constraintdef`), so they
/// restore exactly what the migrations created, whatever that becomes.
pub struct ForeignKeys {
    drops: Vec<String>,
    adds: Vec<String>,
}

/// Drops `loan`'s foreign keys for a bulk load; [`ForeignKeys::restore`] puts them back in the
/// same transaction.
///
/// A foreign key is checked row by row, and for a million loans those checks (two row locks per
/// loan, on members and books written moments before) take twice as long as the rest of the
/// COPY. Added back afterwards, each key is validated by one join over the whole table — the
/// order PostgreSQL's own documentation and `pg_restore` use for bulk loads. If anything fails,
/// the rollback restores the keys with everything else. Dropping a key locks `loan` exclusively
/// until the seed commits: readers of loans wait for it, as writers already do.
pub async fn suspend_loan_foreign_keys(conn: &mut PgConnection) -> sqlx::Result<ForeignKeys> {
    let rows = sqlx::query!(
        r#"
        select format('alter table loan drop constraint %I', conname) as "drop!",
               format('alter table loan add constraint %I %s', conname, pg_get_constraintdef(oid)) as "add!"
        from pg_constraint
        where conrelid = 'loan'::regclass and contype = 'f'
        order by conname
        "#
    )
    .fetch_all(&mut *conn)
    .await?;
    let keys = ForeignKeys {
        drops: rows.iter().map(|r| r.drop.clone()).collect(),
        adds: rows.into_iter().map(|r| r.add).collect(),
    };
    for statement in &keys.drops {
        sqlx::raw_sql(sqlx::AssertSqlSafe(statement.as_str()))
            .execute(&mut *conn)
            .await?;
    }
    Ok(keys)
}

impl ForeignKeys {
    /// Adds the keys back, validating every loan against them.
    pub async fn restore(self, conn: &mut PgConnection) -> sqlx::Result<()> {
        for statement in &self.adds {
            sqlx::raw_sql(sqlx::AssertSqlSafe(statement.as_str()))
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }
}

/// Fresh planner statistics, so that the settlement right after a large seed does not plan its
/// queries for empty tables (autovacuum would get there, but later).
pub async fn analyze_library(conn: &mut PgConnection) -> sqlx::Result<()> {
    sqlx::raw_sql("analyze member, book, loan").execute(conn).await?;
    Ok(())
}
