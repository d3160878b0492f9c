use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    finesettle::telemetry::init();
    let cli = finesettle::cli::Cli::parse();
    let code = match finesettle::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(error = format!("{error:#}"), "finesettle stopped");
            eprintln!("finesettle: {error:#}");
            std::process::ExitCode::FAILURE
        }
    };
    // Flush the last spans, logs and metric values; blocks until the collector answers or the
    // export timeout passes.
    let _ = tokio::task::spawn_blocking(finesettle::telemetry::shutdown).await;
    code
}
