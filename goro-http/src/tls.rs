//! TLS configuration from PEM: a certificate chain and a private key, as
//! Go's `ListenAndServeTLS(certFile, keyFile)` takes them.
//!
//! The configurations made here use rustls with the *ring* crypto provider
//! (pure Rust and assembly: no cmake or C toolchain beyond `cc`), TLS 1.2
//! and 1.3, and offer ALPN `h2` then `http/1.1`, so a client that speaks
//! HTTP/2 gets it. Anything else (client certificates, other providers, a
//! certificate resolver for SNI) is one `rustls::ServerConfig` away: build
//! it yourself and hand it to [`crate::Builder::tls`]; set its
//! `alpn_protocols` to offer HTTP/2.

use rustls::crypto::ring;
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::error::Error;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// What [`from_pem`] accepts as a certificate chain.
const CERT_FORM: &str = "one or more '-----BEGIN CERTIFICATE-----' blocks, \
     the server's certificate first, then its intermediates";

/// What [`from_pem`] accepts as a private key.
const KEY_FORM: &str = "one '-----BEGIN PRIVATE KEY-----' (PKCS#8), \
     '-----BEGIN RSA PRIVATE KEY-----' (PKCS#1) or \
     '-----BEGIN EC PRIVATE KEY-----' (SEC1) block";

/// A TLS configuration could not be made: a PEM file that is missing,
/// unreadable or not of the accepted form (the message names the file and
/// the form), or a key that does not fit the certificate.
///
/// ```
/// let e = goro_http::tls::from_pem_files("/nonexistent/cert.pem", "/nonexistent/key.pem")
///     .unwrap_err();
/// assert!(e.to_string().contains("/nonexistent/cert.pem"));
/// ```
#[derive(Debug)]
pub struct TlsError {
    msg: String,
    source: Option<Box<dyn Error + Send + Sync>>,
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl Error for TlsError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

impl TlsError {
    fn new(msg: String, source: impl Into<Box<dyn Error + Send + Sync>>) -> TlsError {
        TlsError {
            msg,
            source: Some(source.into()),
        }
    }
}

/// A server configuration from a PEM certificate chain file and a PEM
/// private key file (Go's `ListenAndServeTLS(certFile, keyFile)`), offering
/// ALPN `h2` and `http/1.1`.
///
/// Errors name the file and the form it should have.
///
/// ```no_run
/// let tls = goro_http::tls::from_pem_files("cert.pem", "key.pem")?;
/// let server = goro_http::Server::builder().tls(tls).build();
/// # drop(server);
/// # Ok::<(), goro_http::tls::TlsError>(())
/// ```
pub fn from_pem_files(
    cert_file: impl AsRef<Path>,
    key_file: impl AsRef<Path>,
) -> Result<Arc<ServerConfig>, TlsError> {
    let (cert_file, key_file) = (cert_file.as_ref(), key_file.as_ref());
    let read = |path: &Path, what: &str| {
        std::fs::read(path).map_err(|e| {
            TlsError::new(
                format!("reading the {what} file {}: {e}", path.display()),
                e,
            )
        })
    };
    let cert = read(cert_file, "certificate")?;
    let key = read(key_file, "private key")?;
    config(
        &cert,
        &key,
        &format!("certificate file {}", cert_file.display()),
        &format!("private key file {}", key_file.display()),
    )
}

/// [`from_pem_files`] from PEM text in memory (a certificate made at start,
/// a secret store's value).
///
/// ```
/// let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
/// let tls = goro_http::tls::from_pem(
///     cert.cert.pem().as_bytes(),
///     cert.key_pair.serialize_pem().as_bytes(),
/// )?;
/// assert_eq!(tls.alpn_protocols, [b"h2".to_vec(), b"http/1.1".to_vec()]);
///
/// let e = goro_http::tls::from_pem(b"not pem", b"").unwrap_err();
/// assert!(e.to_string().contains("BEGIN CERTIFICATE"));
/// # Ok::<(), goro_http::tls::TlsError>(())
/// ```
pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<Arc<ServerConfig>, TlsError> {
    config(cert_pem, key_pem, "certificate PEM", "private key PEM")
}

fn config(
    cert_pem: &[u8],
    key_pem: &[u8],
    cert_name: &str,
    key_name: &str,
) -> Result<Arc<ServerConfig>, TlsError> {
    let bad = |name: &str, form: &str, e: rustls_pki_types::pem::Error| {
        let why = match e {
            rustls_pki_types::pem::Error::NoItemsFound => "no PEM block of that kind".to_string(),
            e => e.to_string(),
        };
        TlsError {
            msg: format!("{name}: {why}; expected {form}"),
            source: None,
        }
    };
    let certs = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(cert_name, CERT_FORM, e))?;
    if certs.is_empty() {
        return Err(bad(
            cert_name,
            CERT_FORM,
            rustls_pki_types::pem::Error::NoItemsFound,
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| bad(key_name, KEY_FORM, e))?;
    let mut cfg = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::new(format!("TLS protocol versions: {e}"), e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            TlsError::new(
                format!("{key_name} does not fit {cert_name}, or is unsupported: {e}"),
                e,
            )
        })?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}
