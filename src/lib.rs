//! cordon: run an AI agent, or any command, inside a boundary the Linux
//! kernel enforces.
//!
//! The three doors: files ([`sandbox::files`], [`sandbox::landlock`]),
//! network (only `lo` inside the sandbox's network namespace) and
//! credentials (the built-in deny list in [`policy::defaults`], the
//! environment scrub in [`credentials::env`]). The policy
//! model is [`policy`]; the runtime is [`sandbox`].

pub mod audit;
pub mod cli;
pub mod credentials;
pub mod doctor;
pub mod escape;
pub mod explain;
pub mod log;
pub mod manual;
pub mod mcp;
pub mod net;
pub mod policy;
pub mod probe;
pub mod sandbox;
pub mod say;
// The one module with `unsafe` (`unsafe_code` is denied crate-wide in
// Cargo.toml's `[lints]`).
#[allow(unsafe_code)]
pub mod sys;
