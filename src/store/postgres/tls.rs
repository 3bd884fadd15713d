//! TLS to the database, as libpq's `sslmode` asks for it (rustls, no system OpenSSL):
//!
//! | `sslmode` | encrypted | server certificate checked |
//! |---|---|---|
//! | `disable`, `allow` | no | - |
//! | `prefer` (the default) | if the server offers it | no |
//! | `require` | yes | no (the chain, if `sslrootcert` is given, as libpq does) |
//! | `verify-ca` | yes | the chain, against the roots |
//! | `verify-full` | yes | the chain and the host name |
//!
//! The roots: `sslrootcert=FILE` (PEM), `sslrootcert=system`, else
//! `~/.postgresql/root.crt` if it exists, else the system's. A local socket never uses TLS.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::{Error, Result};

/// What a URL asks for.
pub struct Tls {
    pub mode: SslMode,
    pub connector: MakeRustlsConnect,
}

/// How much of the server's certificate is checked.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Check {
    Nothing,
    Chain,
    ChainAndName,
}

/// Takes `sslmode` and `sslrootcert` out of `url` (the driver knows only some of libpq's
/// modes) and says what TLS they ask for. Errors are [`Error::Open`], saying what to
/// change (the caller names the URL).
pub fn from_url(url: &str) -> Result<(String, Tls)> {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, q),
        None => (url, ""),
    };
    let mut kept = Vec::new();
    let (mut mode, mut root) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => mode = Some(decode(value)),
            "sslrootcert" => root = Some(decode(value)),
            "sslcert" | "sslkey" | "sslpassword" => {
                return Err(Error::Open(format!(
                    "`{key}` (a client certificate) is not supported; authenticate with a password"
                )));
            }
            _ => kept.push(pair),
        }
    }
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    let (ssl, check) = match mode.as_deref().unwrap_or("prefer") {
        "disable" | "allow" => (SslMode::Disable, Check::Nothing),
        "prefer" => (SslMode::Prefer, Check::Nothing),
        "require" if root.is_some() => (SslMode::Require, Check::Chain),
        "require" => (SslMode::Require, Check::Nothing),
        "verify-ca" => (SslMode::Require, Check::Chain),
        "verify-full" => (SslMode::Require, Check::ChainAndName),
        other => {
            return Err(Error::Open(format!(
                "sslmode `{other}` is not one of disable, allow, prefer, require, verify-ca, verify-full"
            )));
        }
    };
    let config = client_config(check, root.as_deref())?;
    Ok((
        url,
        Tls {
            mode: ssl,
            connector: MakeRustlsConnect::new(config),
        },
    ))
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn client_config(check: Check, root: Option<&str>) -> Result<ClientConfig> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Open(format!("TLS: {e}")))?;
    let webpki = || {
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots(root)?), provider())
            .build()
            .map_err(|e| Error::Open(format!("TLS: {e}")))
    };
    let verifier: Arc<dyn ServerCertVerifier> = match check {
        Check::Nothing => Arc::new(Lenient {
            chain: None,
            provider: provider(),
        }),
        Check::Chain => Arc::new(Lenient {
            chain: Some(webpki()?),
            provider: provider(),
        }),
        Check::ChainAndName => webpki()?,
    };
    Ok(builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// The roots certificates are checked against.
fn roots(root: Option<&str>) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    let default = dirs::home_dir()
        .map(|h| h.join(".postgresql/root.crt"))
        .filter(|p| p.is_file());
    let file = match root {
        Some("system") => None,
        Some(path) => Some(std::path::PathBuf::from(path)),
        None => default,
    };
    match file {
        Some(file) => {
            let certs = CertificateDer::pem_file_iter(&file)
                .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
                .map_err(|e| {
                    Error::Open(format!("cannot read sslrootcert {}: {e}", file.display()))
                })?;
            for cert in certs {
                store
                    .add(cert)
                    .map_err(|e| Error::Open(format!("sslrootcert {}: {e}", file.display())))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
        }
    }
    if store.is_empty() {
        return Err(Error::Open(
            "no root certificates to check the server against; give sslrootcert=FILE".into(),
        ));
    }
    Ok(store)
}

/// A check short of `verify-full`: none (`prefer`, `require`: encrypted, the certificate
/// taken as it comes, as libpq does), or the chain without the host name (`verify-ca`).
/// Either way the handshake's signature is verified, so the peer holds the key of the
/// certificate it sent.
#[derive(Debug)]
struct Lenient {
    /// The chain's verifier for `verify-ca`; `None` checks no certificate.
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Percent-decodes a URL parameter value.
fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], value.get(i + 1..i + 3)) {
            (b'%', Some(hex)) if u8::from_str_radix(hex, 16).is_ok() => {
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'%'));
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_rootcert_leave_the_url() {
        let (url, tls) =
            from_url("postgresql://u@h/db?sslmode=require&application_name=x").unwrap();
        assert_eq!(url, "postgresql://u@h/db?application_name=x");
        assert_eq!(tls.mode, SslMode::Require);
        let (url, tls) = from_url("postgresql://u@h/db").unwrap();
        assert_eq!(url, "postgresql://u@h/db");
        assert_eq!(tls.mode, SslMode::Prefer);
        let (_, tls) = from_url("postgresql://u@h/db?sslmode=disable").unwrap();
        assert_eq!(tls.mode, SslMode::Disable);
        assert!(from_url("postgresql://u@h/db?sslmode=bogus").is_err());
        assert!(from_url("postgresql://u@h/db?sslcert=/x").is_err());
        let e = from_url("postgresql://u@h/db?sslmode=verify-full&sslrootcert=/no/such.pem")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("/no/such.pem"), "{e}");
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(decode("%2Ftmp%2Fca.pem"), "/tmp/ca.pem");
        assert_eq!(decode("a%zzb%"), "a%zzb%");
    }
}
