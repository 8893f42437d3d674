//! A TLS server's certificate (webhooks, Runtime SDK hooks): generated at start (a private CA and a serving
//! certificate signed by it; the CA goes into the webhook configuration's `caBundle`), or read
//! from a mounted Secret's `tls.crt` and `tls.key` and read again when those files change, so
//! a rotated certificate is served without a restart.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::crypto::aws_lc_rs::sign::any_supported_type;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// Why a certificate could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("generating the webhook certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {problem}")]
    Invalid { path: PathBuf, problem: String },
}

/// A CA and a serving certificate signed by it, PEM-encoded.
#[derive(Clone)]
pub struct GeneratedCert {
    /// The CA certificate: what the API server must trust (`caBundle`).
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

// The key stays out of logs.
impl fmt::Debug for GeneratedCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeneratedCert")
            .field("ca_pem", &self.ca_pem)
            .field("cert_pem", &self.cert_pem)
            .finish_non_exhaustive()
    }
}

/// Names every generated serving certificate holds, besides the caller's.
const LOCAL_NAMES: [&str; 2] = ["localhost", "127.0.0.1"];

/// Generates a CA and a serving certificate for `localhost`, `127.0.0.1` and `hosts` (DNS
/// names or IP addresses, e.g. the webhook Service's `<svc>.<namespace>.svc`).
pub fn generate(hosts: &[String]) -> Result<GeneratedCert, CertError> {
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.distinguished_name
        .push(DnType::CommonName, "capstan-webhook-ca");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, &ca_key);

    let mut names: Vec<String> = LOCAL_NAMES.iter().map(|n| n.to_string()).collect();
    for host in hosts {
        if !names.contains(host) {
            names.push(host.clone());
        }
    }
    let key = KeyPair::generate()?;
    let mut serving = CertificateParams::new(names)?;
    serving
        .distinguished_name
        .push(DnType::CommonName, "capstan-webhook");
    serving.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = serving.signed_by(&key, &issuer)?;
    Ok(GeneratedCert {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// Where the server's certificate comes from.
#[derive(Clone, Debug)]
pub enum Certificate {
    /// Made at start ([`generate`]).
    Generated(GeneratedCert),
    /// `tls.crt` and `tls.key` in this directory (a mounted Secret), re-read when they change.
    Files(PathBuf),
}

/// Builds a rustls key from PEM texts; `origin` names them in errors.
fn certified_key(cert_pem: &[u8], key_pem: &[u8], origin: &Path) -> Result<CertifiedKey, CertError> {
    let invalid = |problem: String| CertError::Invalid {
        path: origin.to_path_buf(),
        problem,
    };
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(format!("certificate PEM: {e}")))?;
    if chain.is_empty() {
        return Err(invalid("no certificate in the PEM".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| invalid(format!("private key PEM: {e}")))?;
    let signer = any_supported_type(&key).map_err(|e| invalid(format!("private key: {e}")))?;
    Ok(CertifiedKey::new(chain, signer))
}

/// When and how big the files were when last read: a rotation changes one of them.
type Stamp = Vec<Option<(SystemTime, u64)>>;

fn stamp(paths: &[PathBuf]) -> Stamp {
    paths
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .ok()
                .and_then(|m| Some((m.modified().ok()?, m.len())))
        })
        .collect()
}

struct Loaded {
    stamp: Stamp,
    key: Arc<CertifiedKey>,
}

/// The certificate rustls serves, asked for on every handshake. Files are checked then (two
/// `stat` calls): a changed pair is read again; one that does not load (a rotation half
/// written) keeps the previous certificate in service until the next handshake.
pub(crate) struct CertResolver {
    files: Option<[PathBuf; 2]>,
    loaded: Mutex<Loaded>,
}

impl fmt::Debug for CertResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertResolver")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl CertResolver {
    pub(crate) fn new(cert: &Certificate) -> Result<CertResolver, CertError> {
        match cert {
            Certificate::Generated(g) => Ok(CertResolver {
                files: None,
                loaded: Mutex::new(Loaded {
                    stamp: Vec::new(),
                    key: Arc::new(certified_key(
                        g.cert_pem.as_bytes(),
                        g.key_pem.as_bytes(),
                        Path::new("generated certificate"),
                    )?),
                }),
            }),
            Certificate::Files(dir) => {
                let files = [dir.join("tls.crt"), dir.join("tls.key")];
                let stamp = stamp(&files);
                let key = Arc::new(read_files(&files)?);
                Ok(CertResolver {
                    files: Some(files),
                    loaded: Mutex::new(Loaded { stamp, key }),
                })
            }
        }
    }

    /// The certificate to serve now, re-read first when its files changed.
    pub(crate) fn current(&self) -> Arc<CertifiedKey> {
        // A poisoned lock only means a panic elsewhere while holding it; the value is whole.
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(files) = &self.files {
            let now = stamp(files);
            if now != loaded.stamp {
                match read_files(files) {
                    Ok(key) => {
                        tracing::info!(dir = %files[0].parent().unwrap_or(Path::new("")).display(),
                            "webhook certificate reloaded");
                        loaded.key = Arc::new(key);
                        loaded.stamp = now;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "webhook certificate changed but does not load; serving the previous one")
                    }
                }
            }
        }
        loaded.key.clone()
    }
}

fn read_files(files: &[PathBuf; 2]) -> Result<CertifiedKey, CertError> {
    let read = |path: &PathBuf| {
        std::fs::read(path).map_err(|source| CertError::Read {
            path: path.clone(),
            source,
        })
    };
    let (cert, key) = (read(&files[0])?, read(&files[1])?);
    certified_key(&cert, &key, &files[0])
}

impl ResolvesServerCert for CertResolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

    fn names(cert: &CertifiedKey) -> Vec<String> {
        let (_, x509) = X509Certificate::from_der(cert.cert[0].as_ref()).expect("DER");
        let san = x509
            .subject_alternative_name()
            .expect("SAN parses")
            .expect("SAN present");
        san.value
            .general_names
            .iter()
            .map(|n| match n {
                GeneralName::DNSName(d) => d.to_string(),
                GeneralName::IPAddress(ip) => format!("{ip:?}"),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn generated_certificate_names_local_addresses_and_hosts() {
        let g =
            generate(&["capstan-webhook.capstan-system.svc".into(), "localhost".into()]).expect("generate");
        let resolver = CertResolver::new(&Certificate::Generated(g.clone())).expect("loads");
        assert_eq!(
            names(&resolver.current()),
            [
                "localhost",
                "[127, 0, 0, 1]",
                "capstan-webhook.capstan-system.svc"
            ]
        );
        assert!(g.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert_ne!(g.ca_pem, g.cert_pem);
    }

    #[test]
    fn files_are_read_again_when_they_change() {
        let dir = tempfile::tempdir().expect("temp dir");
        let write = |g: &GeneratedCert| {
            std::fs::write(dir.path().join("tls.crt"), &g.cert_pem).expect("write cert");
            std::fs::write(dir.path().join("tls.key"), &g.key_pem).expect("write key");
        };
        let first = generate(&["first.example".into()]).expect("generate");
        write(&first);
        let resolver = CertResolver::new(&Certificate::Files(dir.path().into())).expect("loads");
        assert!(names(&resolver.current()).contains(&"first.example".to_string()));

        // A half-written rotation keeps the old certificate in service.
        std::fs::write(
            dir.path().join("tls.crt"),
            "not a certificate, and longer than before",
        )
        .expect("write");
        assert!(names(&resolver.current()).contains(&"first.example".to_string()));

        let second = generate(&["second.example".into()]).expect("generate");
        write(&second);
        assert!(names(&resolver.current()).contains(&"second.example".to_string()));
    }

    #[test]
    fn missing_files_are_an_error_naming_them() {
        let dir = tempfile::tempdir().expect("temp dir");
        let err = CertResolver::new(&Certificate::Files(dir.path().into())).expect_err("no files");
        assert!(
            err.to_string()
                .starts_with(&format!("reading {}", dir.path().join("tls.crt").display())),
            "{err}"
        );
    }
}
