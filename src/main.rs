use clap::Parser;

/// mimalloc instead of glibc's malloc: a request allocates and frees many small buffers across
/// the runtime's threads, where glibc's arenas spent a tenth of the read path's CPU
/// (load/results/reads.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
