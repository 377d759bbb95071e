//! The network door. [`proxy`] is the HTTP and SOCKS5 proxy that asks the
//! host rules ([`crate::policy::host`]) before every connection; [`serve`]
//! runs the proxy for one sandbox; [`inside`] is what the sandbox sees
//! (ports, environment); [`gate`] decides each connection the proxy makes,
//! [`learn`] is `cordon learn`'s gate, which lets through and writes
//! down what no rule names, and [`ask`] is `cordon run --ask`'s, which
//! asks the user about it.

/// `AsyncWrite` for a stream wrapper whose reads are its own business and
/// whose writes go straight to its `inner` stream.
macro_rules! writes_through_to_inner {
    ($wrapper:ident) => {
        impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for $wrapper<S> {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                std::pin::Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
            }
            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut self.get_mut().inner).poll_flush(cx)
            }
            fn poll_shutdown(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
            }
        }
    };
}

pub mod ask;
mod counted;
pub mod gate;
pub mod inside;
pub mod learn;
pub mod proxy;
pub mod serve;
mod splice;

pub(crate) use counted::Counted;
