//! The credentials door: secrets never enter the sandbox.
//!
//! - [`env`]: which of the caller's environment variables the command
//!   does not see;
//! - [`ca`]: the CA, in memory only, and its leaf certificates;
//! - [`inject`]: placeholders, real values, and the swaps between them.
//!
//! The policy it enforces (`[network] inspect`, `no_inspect`,
//! `upstream_ca`, `[[network.rules]]`, `[[credentials.inject]]`) is
//! [`crate::policy::inspection`]; the proxy's inspecting half, which uses
//! the CA and the swaps, is [`crate::net::proxy::inspect`].
//!
//! The supervisor uses it in two steps. Before the sandbox exists,
//! [`plan`] makes the placeholders (the command's environment carries them,
//! see [`Plan::placeholders`]) and an empty file for the trust bundle, which
//! the file view binds read-only over the distribution's bundle (see
//! [`Plan::bind`] and [`Plan::trust_env`]). After the sandbox's init is forked,
//! and before it builds its view, [`Plan::start`] generates the CA, writes
//! the bundle (system roots plus the CA certificate; never its key),
//! resolves the real values, from which the proxy's inspector is built.
//! Doing this after the fork keeps the CA key and the real values out of
//! init's memory altogether.

#![warn(missing_docs)]

pub mod ca;
pub mod env;
pub mod inject;

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::policy::inspection::InspectionPolicy;

/// The variables that tell common tools which CA bundle to trust; each
/// points at the sandbox's bundle when inspection is on.
pub const CA_ENV_VARS: &[&str] = &[
    "SSL_CERT_FILE",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
    "CARGO_HTTP_CAINFO",
    "PIP_CERT",
    "AWS_CA_BUNDLE",
    "DENO_CERT",
];

/// Where the bundle appears inside when the host has no distribution bundle
/// to bind over (in the sandbox's private `/tmp`).
pub const FALLBACK_BUNDLE: &str = "/tmp/cordon-ca-bundle.crt";

/// Why the credentials door could not be set up. Nothing runs after these.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// The CA, a certificate, or the bundle.
    #[error(transparent)]
    Ca(#[from] ca::CaError),
    /// A secret could not be resolved.
    #[error(transparent)]
    Inject(#[from] inject::InjectError),
    /// The bundle file could not be made or written.
    #[error("the CA bundle file {}: {source}", path.display())]
    BundleFile {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A rule or secret names a host that `no_inspect` keeps opaque.
    #[error("{what} names {host}, which [network] no_inspect keeps an opaque tunnel: the rule could not be enforced there; remove one of the two")]
    Conflict {
        /// The rule or inject entry.
        what: String,
        /// The host.
        host: String,
    },
}

/// The credentials door prepared before the sandbox exists.
pub struct Plan {
    policy: InspectionPolicy,
    placeholders: Vec<(String, String)>,
    /// [`CA_ENV_VARS`], each naming the bundle's path inside.
    trust_env: Vec<(String, String)>,
    /// The distribution's bundle (the path programs open), if any.
    system: Option<PathBuf>,
    /// The file on the host the bundle is written to.
    host_file: PathBuf,
    /// Where it is bound inside (symlinks resolved).
    target: PathBuf,
}

impl Drop for Plan {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.host_file);
    }
}

/// Prepares the credentials door for one sandbox: nothing when no host is
/// inspected. `sandbox` names the run (`cordon-<pid>-<id>`).
pub fn plan(policy: &InspectionPolicy, sandbox: &str) -> Result<Option<Plan>, CredentialsError> {
    if !policy.enabled() {
        return Ok(None);
    }
    if let Some((what, host)) = policy.conflicts().into_iter().next() {
        return Err(CredentialsError::Conflict { what, host });
    }
    let mut placeholders = Vec::new();
    for spec in &policy.inject {
        if !placeholders.iter().any(|(n, _)| *n == spec.value.env) {
            placeholders.push((spec.value.env.clone(), inject::new_placeholder()?));
        }
    }
    let system = ca::system_bundle();
    let (shown, target) = match &system {
        Some(p) => (p.clone(), p.canonicalize().unwrap_or_else(|_| p.clone())),
        None => (
            PathBuf::from(FALLBACK_BUNDLE),
            PathBuf::from(FALLBACK_BUNDLE),
        ),
    };
    let tmp = std::env::temp_dir();
    remove_stale_bundles(&tmp);
    let host_file = tmp.join(format!("{sandbox}{BUNDLE_SUFFIX}"));
    // Readable by the sandbox's uid; created here so that a file someone
    // else put at that name is never used.
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&host_file)
        .map_err(|source| CredentialsError::BundleFile {
            path: host_file.clone(),
            source,
        })?;
    let shown = shown.display().to_string();
    let trust_env = CA_ENV_VARS
        .iter()
        .map(|v| (v.to_string(), shown.clone()))
        .collect();
    Ok(Some(Plan {
        policy: policy.clone(),
        placeholders,
        trust_env,
        system,
        host_file,
        target,
    }))
}

impl Plan {
    /// The variables that hold placeholders inside the sandbox, with their
    /// values: `(name, placeholder)`; empty when nothing is injected. The
    /// command's environment must carry these instead of the caller's
    /// values of the same names.
    pub fn placeholders(&self) -> &[(String, String)] {
        &self.placeholders
    }

    /// The CA bundle variables ([`CA_ENV_VARS`]) pointing at the sandbox's
    /// bundle.
    pub fn trust_env(&self) -> &[(String, String)] {
        &self.trust_env
    }

    /// The bundle bind for the file view: (host file, path inside).
    pub fn bind(&self) -> (PathBuf, PathBuf) {
        (self.host_file.clone(), self.target.clone())
    }

    /// The inspection rules this plan was made for.
    pub fn policy(&self) -> &InspectionPolicy {
        &self.policy
    }

    /// The distribution's CA bundle, whose roots the proxy trusts upstream.
    pub fn system_bundle(&self) -> Option<&Path> {
        self.system.as_deref()
    }

    /// After init is forked: generates the CA, writes the bundle and
    /// resolves the real values, which the proxy's inspector is built from.
    pub fn start(
        &self,
        sandbox: &str,
    ) -> Result<(ca::SandboxCa, inject::Secrets), CredentialsError> {
        let ca = ca::SandboxCa::generate(sandbox)?;
        let text = ca::bundle_text(self.system.as_deref(), &ca.cert_pem())?;
        write_bundle(&self.host_file, &text)?;
        let secrets = inject::Secrets::resolve(&self.policy.inject, &self.placeholders)?;
        Ok((ca, secrets))
    }
}

/// The name of a run's bundle file: `cordon-<pid>-<id>-ca-bundle.pem`.
const BUNDLE_SUFFIX: &str = "-ca-bundle.pem";

/// Removes the bundle files of runs that were killed before they could
/// (ours only, and only when their supervisor is gone). They hold public
/// certificates only; this keeps the temp dir tidy.
fn remove_stale_bundles(dir: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let uid = nix::unistd::geteuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("cordon-"))
            .filter(|n| n.ends_with(BUNDLE_SUFFIX))
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let ours = entry
            .metadata()
            .is_ok_and(|m| m.is_file() && m.uid() == uid);
        if ours && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn write_bundle(path: &Path, text: &str) -> Result<(), CredentialsError> {
    let err = |source| CredentialsError::BundleFile {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(err)?;
    file.write_all(text.as_bytes()).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_bundles_of_dead_runs_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        // A pid above the kernel's maximum is never alive.
        let dead = dir
            .path()
            .join(format!("cordon-99999999-abc{BUNDLE_SUFFIX}"));
        let alive = dir
            .path()
            .join(format!("cordon-{}-abc{BUNDLE_SUFFIX}", std::process::id()));
        let other = dir.path().join("cordon-99999999-abc-unrelated.pem");
        for f in [&dead, &alive, &other] {
            std::fs::write(f, "x").unwrap();
        }
        remove_stale_bundles(dir.path());
        assert!(!dead.exists());
        assert!(alive.exists());
        assert!(other.exists());
    }
}
