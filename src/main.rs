use std::process::ExitCode;

fn main() -> ExitCode {
    capstan::cli::main()
}
