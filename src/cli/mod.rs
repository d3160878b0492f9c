//! The command line: `serve | migrate | settle | backfill | audit | seed | openapi`.

mod audit;
mod settle;

use chrono::NaiveDate;
use clap::{Parser, Subcommand};

use crate::config::{ApiTokens, Role, Settings};
use crate::startup::{Application, shutdown_signal};
use crate::{http, store};

/// Loans, overdue fines, and a nightly settlement that runs once across replicas.
/// Configured by environment variables (see README).
#[derive(Debug, Parser)]
#[command(name = "finesettle", version = store::schema::version_line())]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the HTTP API and run the scheduler (runs migrations first).
    Serve,
    /// Create the database if missing and apply the migrations (expand only, as `serve` does).
    Migrate {
        /// Also apply this release's contract migrations, which remove what the previous release
        /// relied on: run it once every replica runs this release. The previous release then
        /// refuses the database, so a rollback needs a restore.
        #[arg(long)]
        contract: bool,
    },
    /// Settle one business date now, through the job's lock, fencing and records.
    Settle {
        /// The business date, YYYY-MM-DD.
        #[arg(long)]
        date: NaiveDate,
    },
    /// Settle a range of business dates, oldest first, with a progress bar.
    Backfill {
        /// First date, YYYY-MM-DD.
        #[arg(long)]
        from: NaiveDate,
        /// Last date (inclusive), YYYY-MM-DD.
        #[arg(long)]
        to: NaiveDate,
    },
    /// Recompute every fine of an ended month from the loans and compare them, with their
    /// CHARGEs and REVERSALs, with what is stored; exits non-zero on any difference (which
    /// raises the month's AUDIT alert).
    Audit {
        /// The month, YYYY-MM; its dates must all be settled.
        #[arg(long, value_parser = audit::parse_month)]
        month: NaiveDate,
    },
    /// Fill an empty library with a realistic demo data set: members, books, back-dated loans.
    Seed(crate::seed::SeedOptions),
    /// Print the OpenAPI document.
    Openapi,
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Openapi => {
            println!("{}", http::openapi::document().to_pretty_json()?);
            Ok(())
        }
        Command::Migrate { contract } => {
            let settings = Settings::from_env()?;
            let pool = store::database::connect_in(&settings.database_url, &settings.db_schema, 2).await?;
            if contract {
                store::database::migrate_contract(&pool).await?;
            } else {
                store::database::migrate(&pool).await?;
            }
            tracing::info!(release = store::schema::RELEASE, contract, "migrations applied");
            Ok(())
        }
        Command::Settle { date } => settle::settle_range(Settings::from_env()?, date, date).await,
        Command::Backfill { from, to } => settle::settle_range(Settings::from_env()?, from, to).await,
        Command::Audit { month } => audit::audit_month(Settings::from_env()?, month).await,
        Command::Seed(options) => crate::seed::run(Settings::from_env()?, options).await,
        Command::Serve => {
            let mut settings = Settings::from_env()?;
            if settings.api_tokens.is_empty() {
                let token = ApiTokens::generate_token();
                settings.api_tokens.add(Role::Admin, &token);
                // Printed once, to stdout, never logged: the operator copies it from here.
                println!("FINESETTLE_API_TOKENS is empty; generated an admin token for this process:");
                println!("admin={token}");
            }
            let app = Application::build(settings).await?;
            app.run_until_stopped(shutdown_signal()).await
        }
    }
}
