//! `cordon`: parse the command line and dispatch; see the library for the rest.

use clap::Parser;

fn main() {
    let cli = cordon::cli::Cli::parse();
    let code = match cordon::cli::dispatch(cli) {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("cordon: {}", failure.message);
            failure.code
        }
    };
    std::process::exit(code);
}
