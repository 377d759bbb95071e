//! Upstream trust: the roots an inspected tunnel's upstream certificate
//! must chain to (the system bundle, if any, and each `--upstream-ca`).

use std::path::Path;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;

use super::InspectError;
use crate::policy::inspection::InspectionPolicy;

/// The client configuration for upstream connections.
pub(super) fn upstream_config(
    policy: &InspectionPolicy,
    system_bundle: Option<&Path>,
    provider: Arc<CryptoProvider>,
) -> Result<rustls::ClientConfig, InspectError> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(path) = system_bundle {
        // Unparsable entries in the system bundle are skipped, as
        // every TLS library does; the rest still count.
        if let Ok(bytes) = std::fs::read(path) {
            let certs = read_pem_certs(&bytes);
            roots.add_parsable_certificates(certs);
        }
    }
    for ca_file in &policy.upstream_ca {
        let path = ca_file.value.display().to_string();
        let err = |why: String| InspectError::UpstreamCa {
            path: path.clone(),
            source_of: ca_file.source.to_string(),
            why,
        };
        let bytes = std::fs::read(&ca_file.value).map_err(|e| err(e.to_string()))?;
        let certs = read_pem_certs(&bytes);
        if certs.is_empty() {
            return Err(err("holds no PEM certificate".into()));
        }
        for cert in certs {
            roots.add(cert).map_err(|e| err(e.to_string()))?;
        }
    }
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Parses every certificate in a PEM file; other blocks are skipped.
fn read_pem_certs(bytes: &[u8]) -> Vec<CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(bytes)
        .filter_map(Result::ok)
        .collect()
}
