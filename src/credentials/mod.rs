//! The credentials door: secrets never enter the sandbox. [`env`] decides
//! which of the caller's environment variables the command does not see.

pub mod env;
