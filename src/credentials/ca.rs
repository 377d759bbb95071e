//! The sandbox's own certificate authority, in memory only.
//!
//! [`SandboxCa::generate`] makes a fresh ECDSA P-256 CA for one sandbox.
//! Its private key is never written anywhere and never crosses into the
//! sandbox: only the CA *certificate* goes into the trust bundle the
//! sandbox reads ([`bundle_text`]). Leaf certificates are minted on demand,
//! one per host (a DNS name or an IP address SAN), and cached.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::sign::CertifiedKey;

/// Why the CA, a leaf, or the bundle could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CaError {
    /// rcgen refused (key generation or signing).
    #[error("cannot make the sandbox CA's {what}: {source}")]
    Generate {
        /// CA or leaf.
        what: &'static str,
        /// What rcgen said.
        source: rcgen::Error,
    },
    /// The leaf's key does not suit rustls.
    #[error("cannot use the leaf key for {host}: {source}")]
    Key {
        /// The host.
        host: String,
        /// What rustls said.
        source: rustls::Error,
    },
    /// A host cannot be put in a certificate.
    #[error("cannot mint a certificate for {0:?}")]
    Name(String),
    /// The system's trust bundle could not be read.
    #[error("cannot read the system CA bundle {}: {source}", path.display())]
    Bundle {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// Where distributions keep their PEM bundle of trusted roots, most
/// common first: Debian/Ubuntu/Arch/Alpine, Fedora/RHEL, openSUSE, older
/// RHEL, Alpine and BSD-style.
pub const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/pki/tls/cacert.pem",
    "/etc/ssl/cert.pem",
];

/// The distribution's bundle: the first of [`SYSTEM_BUNDLES`] that is a
/// readable file (symlinks followed), as given (the path programs open).
pub fn system_bundle() -> Option<PathBuf> {
    SYSTEM_BUNDLES
        .iter()
        .map(PathBuf::from)
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
}

/// Validity from yesterday (clock skew) to `days` from now, both at
/// midnight UTC.
fn validity(params: &mut CertificateParams, days: i64) {
    let today = time::OffsetDateTime::now_utc().replace_time(time::Time::MIDNIGHT);
    params.not_before = today.saturating_sub(time::Duration::days(1));
    params.not_after = today.saturating_add(time::Duration::days(days));
}

/// A per-sandbox CA and its cache of leaf certificates.
pub struct SandboxCa {
    cert: rcgen::Certificate,
    key: KeyPair,
    leaves: Mutex<HashMap<String, Arc<CertifiedKey>>>,
}

impl SandboxCa {
    /// A new CA named after the sandbox (`cordon-<pid>-<id>`).
    pub fn generate(sandbox: &str) -> Result<SandboxCa, CaError> {
        let ca_err = |source| CaError::Generate { what: "CA", source };
        let key = KeyPair::generate().map_err(ca_err)?;
        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(DnType::CommonName, format!("cordon sandbox CA {sandbox}"));
        params
            .distinguished_name
            .push(DnType::OrganizationName, "cordon");
        // Path length 0: it signs leaves, never another CA.
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        // The CA dies with the run; a month is ample and bounds the damage
        // if its certificate is kept somewhere and trusted by mistake.
        validity(&mut params, 30);
        let cert = params.self_signed(&key).map_err(ca_err)?;
        Ok(SandboxCa {
            cert,
            key,
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// The CA certificate, PEM.
    pub fn cert_pem(&self) -> String {
        self.cert.pem()
    }

    /// The CA certificate, DER.
    pub fn cert_der(&self) -> CertificateDer<'static> {
        self.cert.der().clone()
    }

    /// The leaf for `host` (a normalised name or an IP literal), minted on
    /// first use and cached.
    pub fn leaf(&self, host: &str) -> Result<Arc<CertifiedKey>, CaError> {
        if let Some(found) = self.cache().get(host) {
            return Ok(found.clone());
        }
        let minted = Arc::new(self.mint(host)?);
        self.cache().insert(host.to_string(), minted.clone());
        Ok(minted)
    }

    /// The cache; a panic elsewhere cannot poison it for good (it only
    /// ever holds complete entries).
    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<CertifiedKey>>> {
        self.leaves
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn mint(&self, host: &str) -> Result<CertifiedKey, CaError> {
        let leaf_err = |source| CaError::Generate {
            what: "leaf certificate",
            source,
        };
        let san = match host.parse::<IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName(
                host.to_string()
                    .try_into()
                    .map_err(|_| CaError::Name(host.to_string()))?,
            ),
        };
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, host);
        params.subject_alt_names = vec![san];
        params.is_ca = IsCa::NoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        validity(&mut params, 7);
        let key = KeyPair::generate().map_err(leaf_err)?;
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .map_err(leaf_err)?;
        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let signing = rustls::crypto::ring::sign::any_supported_type(&der).map_err(|source| {
            CaError::Key {
                host: host.to_string(),
                source,
            }
        })?;
        Ok(CertifiedKey::new(
            vec![cert.der().clone(), self.cert.der().clone()],
            signing,
        ))
    }
}

/// The bundle the sandbox trusts: the system's roots (from `system`, if
/// any) followed by the sandbox CA's certificate.
pub fn bundle_text(system: Option<&Path>, ca_pem: &str) -> Result<String, CaError> {
    let mut text = match system {
        Some(path) => std::fs::read_to_string(path).map_err(|source| CaError::Bundle {
            path: path.to_path_buf(),
            source,
        })?,
        None => String::new(),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("# cordon: this sandbox's own CA (TLS inspection by the proxy)\n");
    text.push_str(ca_pem);
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::ServerName;

    /// Verifies `leaf` for `name` against the CA, as a TLS client would.
    fn verify(ca: &SandboxCa, leaf: &CertifiedKey, name: &str) -> Result<(), rustls::Error> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.cert_der()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
        let name = ServerName::try_from(name.to_string()).unwrap();
        rustls::client::danger::ServerCertVerifier::verify_server_cert(
            verifier.as_ref(),
            &leaf.cert[0],
            &leaf.cert[1..],
            &name,
            &[],
            rustls::pki_types::UnixTime::now(),
        )
        .map(|_| ())
    }

    #[test]
    fn leaves_verify_for_their_host_only_and_are_cached() {
        let ca = SandboxCa::generate("cordon-test").unwrap();
        let leaf = ca.leaf("api.github.com").unwrap();
        verify(&ca, &leaf, "api.github.com").unwrap();
        assert!(verify(&ca, &leaf, "evil.example").is_err());
        let ip = ca.leaf("127.0.0.1").unwrap();
        verify(&ca, &ip, "127.0.0.1").unwrap();
        assert!(verify(&ca, &ip, "127.0.0.2").is_err());
        let v6 = ca.leaf("::1").unwrap();
        verify(&ca, &v6, "::1").unwrap();
        // Cached: the same leaf again.
        assert!(Arc::ptr_eq(&leaf, &ca.leaf("api.github.com").unwrap()));
        // Another sandbox's CA does not vouch for this one's leaves.
        let other = SandboxCa::generate("cordon-other").unwrap();
        assert!(verify(&other, &leaf, "api.github.com").is_err());
    }

    #[test]
    fn bundle_holds_the_system_roots_and_the_ca_but_no_key() {
        let ca = SandboxCa::generate("cordon-test").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let sys = dir.path().join("roots.pem");
        std::fs::write(
            &sys,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----",
        )
        .unwrap();
        let text = bundle_text(Some(&sys), &ca.cert_pem()).unwrap();
        assert!(text.starts_with("-----BEGIN CERTIFICATE-----\nAAAA"));
        assert!(text.ends_with(&ca.cert_pem()));
        assert!(!text.contains("PRIVATE KEY"));
        assert!(bundle_text(Some(&dir.path().join("missing")), "x").is_err());
        assert_eq!(
            bundle_text(None, &ca.cert_pem())
                .unwrap()
                .matches("BEGIN CERTIFICATE")
                .count(),
            1
        );
    }
}
