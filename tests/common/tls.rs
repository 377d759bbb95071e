//! TLS for the tests' upstreams: a CA of the test's own, and leaves for
//! 127.0.0.1 and host.cordon.internal it signs (the sandbox trusts it
//! through `--upstream-ca`), and a server for them.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A CA for the upstreams, and its PEM.
pub struct TestCa {
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).unwrap();
        TestCa { cert, key }
    }

    pub fn pem(&self) -> String {
        self.cert.pem()
    }

    /// A TLS server configuration with [`TestCa::leaf`].
    pub fn server_config(&self) -> rustls::ServerConfig {
        let (chain, key) = self.leaf();
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap()
    }

    /// A leaf for 127.0.0.1, and for host.cordon.internal (the name the
    /// sandbox reaches the host's loopback by).
    pub fn leaf(&self) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.subject_alt_names = vec![
            SanType::IpAddress("127.0.0.1".parse().unwrap()),
            SanType::DnsName("host.cordon.internal".try_into().unwrap()),
        ];
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        (
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
    }
}

/// Listens on a free port of 127.0.0.1 and serves each connection with
/// `config` and then `serve`, on a runtime in a thread of its own; returns
/// the port.
pub fn serve_tls<F, Fut>(config: rustls::ServerConfig, serve: F) -> u16
where
    F: Fn(tokio_rustls::server::TlsStream<tokio::net::TcpStream>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let serve = Arc::new(serve);
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, serve) = (acceptor.clone(), serve.clone());
                tokio::spawn(async move {
                    // As real servers do: no Nagle delay on small writes.
                    let _ = tcp.set_nodelay(true);
                    if let Ok(tls) = acceptor.accept(tcp).await {
                        serve(tls).await;
                    }
                });
            }
        });
    });
    port
}
