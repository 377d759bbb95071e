//! `cordon`: parse the command line and dispatch; see the library for the rest.

use clap::Parser;

fn main() {
    let cli = cordon::cli::Cli::parse();
    let code = match cordon::cli::dispatch(cli) {
        Ok(code) => code,
        Err(failure) => {
            // Errors name paths and names a project file or the sandbox chose.
            cordon::say!(
                "cordon: {}",
                cordon::escape::printable_lines(&failure.message)
            );
            failure.code
        }
    };
    std::process::exit(code);
}
