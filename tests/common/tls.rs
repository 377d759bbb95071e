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

    /// [`TestCa::server_config`] offering HTTP/2 and HTTP/1.1 (ALPN), for
    /// [`serve_http`].
    pub fn http_server_config(&self) -> rustls::ServerConfig {
        let mut config = self.server_config();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        config
    }

    /// A leaf for 127.0.0.1, and for host.cordon.internal (the name the
    /// sandbox reaches the host's loopback by).
    pub fn leaf(&self) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
        let (cert, key) = self.signed_leaf();
        (
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
    }

    /// [`TestCa::leaf`] as PEM: the certificate and its key, for servers
    /// of other languages.
    pub fn leaf_pem(&self) -> (String, String) {
        let (cert, key) = self.signed_leaf();
        (cert.pem(), key.serialize_pem())
    }

    fn signed_leaf(&self) -> (rcgen::Certificate, KeyPair) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.subject_alt_names = vec![
            SanType::IpAddress("127.0.0.1".parse().unwrap()),
            SanType::DnsName("host.cordon.internal".try_into().unwrap()),
        ];
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        (cert, key)
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

/// Serves one connection [`serve_tls`] accepted with the service `make`
/// builds (told whether the client chose HTTP/2): over HTTP/2 when it did
/// (ALPN), else over HTTP/1.1, upgrades allowed.
pub async fn serve_http<S, B>(
    tls: tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
    make: impl FnOnce(bool) -> S,
) where
    S: hyper::service::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = hyper::Response<B>,
            Error = std::convert::Infallible,
        > + Send
        + 'static,
    S::Future: Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let service = make(h2);
    let io = hyper_util::rt::TokioIo::new(tls);
    if h2 {
        let _ = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .serve_connection(io, service)
            .await;
    } else {
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(io, service)
            .with_upgrades()
            .await;
    }
}
