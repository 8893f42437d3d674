//! What the benchmark examples share about running: stopping on a signal, and the tagged
//! markdown rows their scripts assemble into tables.

use std::process::ExitCode;

/// Runs `run` until it ends or a signal comes, and the exit code: on an error (or a signal)
/// its chain on stderr after `name`. Dropping the run (on a signal too) kills every process
/// it started and removes its files.
pub async fn until_signal(name: &str, run: impl Future<Output = anyhow::Result<()>>) -> ExitCode {
    let outcome = tokio::select! {
        outcome = run => outcome,
        signal = shutdown_signal() => Err(anyhow::anyhow!("interrupted by {signal}; everything started is being stopped")),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Waits for SIGTERM or SIGINT and names it (never, when the handlers cannot be installed).
async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    }
}

/// A markdown header line and one row, tagged for the script (`HEADER <table> …`,
/// `ROW <table> …`).
pub fn print_table(table: &str, header: &str, row: &str) {
    println!("HEADER {table} {header}");
    println!("ROW {table} {row}");
}
