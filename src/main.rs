use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    finesettle::telemetry::init();
    let cli = finesettle::cli::Cli::parse();
    match finesettle::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(error = format!("{error:#}"), "finesettle stopped");
            eprintln!("finesettle: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
