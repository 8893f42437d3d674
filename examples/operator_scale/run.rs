//! What the benchmark examples share about running: stopping on a signal, and the tagged
//! markdown rows their scripts assemble into tables.

/// Waits for SIGTERM or SIGINT and names it (never, when the handlers cannot be installed).
pub async fn shutdown_signal() -> &'static str {
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
