//! `finesettle seed` as a command: it migrates a new database, prints a summary, and exits
//! non-zero with a clear message when the library is already filled.

use std::process::Output;
use std::time::Duration;

use tokio::process::Command;

use crate::common::database::TestDatabase;

const BIN: &str = env!("CARGO_BIN_EXE_finesettle");

/// `finesettle seed <args>` on `database_url`, with nothing inherited that could configure it.
async fn seed_command(database_url: &str, args: &[&str]) -> Output {
    let mut command = Command::new(BIN);
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("FINESETTLE_") || name.starts_with("OTEL_") || name == "RUST_LOG" {
            command.env_remove(name.as_ref());
        }
    }
    command
        .arg("seed")
        .args(args)
        .env("DATABASE_URL", database_url)
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("finesettle seed finishes")
        .expect("finesettle seed starts")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn the_command_seeds_a_new_database_refuses_to_seed_twice_and_resets_on_request() {
    finesettle::telemetry::init();
    let database = TestDatabase::create().await;
    let args = [
        "--members",
        "20",
        "--books",
        "100",
        "--loans",
        "150",
        "--days-back",
        "30",
    ];

    let first = seed_command(database.url(), &args).await;
    let stdout = text(&first.stdout);
    assert!(first.status.success(), "{stdout}\n{}", text(&first.stderr));
    assert!(
        stdout.contains("seeded 20 members, 100 books and 150 loans"),
        "{stdout}"
    );
    assert!(stdout.contains("45 open and overdue, 15 on loan"), "{stdout}");
    assert!(stdout.contains("loans/s"), "{stdout}");

    let second = seed_command(database.url(), &args).await;
    let stderr = text(&second.stderr);
    assert!(!second.status.success(), "a second seed must fail");
    assert!(
        stderr.contains("the library is not empty (20 members, 100 books, 150 loans); pass --reset"),
        "{stderr}"
    );

    let reset = seed_command(database.url(), &[&args[..], &["--reset", "--seed", "7"]].concat()).await;
    let stdout = text(&reset.stdout);
    assert!(reset.status.success(), "{stdout}\n{}", text(&reset.stderr));
    assert!(stdout.contains("--reset kept the job records"), "{stdout}");
}
