//! Key pairs named by `namespace`/`name`, loaded from inline PEM or files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use culvert_router::config::CertificateConfig;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::{Error, TlsError};

/// The certificates of one config, and the files they were read from.
#[derive(Debug, Default)]
pub struct CertificateStore {
    keys: HashMap<(String, String), Arc<CertifiedKey>>,
    files: Vec<(PathBuf, Option<FileStamp>)>,
}

/// What tells a file apart from its earlier self without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    modified: Option<SystemTime>,
    len: u64,
}

impl FileStamp {
    fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Self {
            modified: meta.modified().ok(),
            len: meta.len(),
        })
    }
}

impl CertificateStore {
    /// Loads every certificate; the first unreadable or invalid one is the error.
    pub fn load(configs: &[CertificateConfig]) -> Result<Self, Error> {
        let mut store = Self::default();
        for config in configs {
            let id = (config.namespace.clone(), config.name.clone());
            if store.keys.contains_key(&id) {
                return Err(Error::Tls(TlsError::Duplicate {
                    namespace: config.namespace.clone(),
                    name: config.name.clone(),
                }));
            }
            let key = store.load_one(config).map_err(|reason| {
                Error::Tls(TlsError::Certificate {
                    namespace: config.namespace.clone(),
                    name: config.name.clone(),
                    reason,
                })
            })?;
            store.keys.insert(id, Arc::new(key));
        }
        Ok(store)
    }

    /// The key pair named `namespace`/`name`.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<CertifiedKey>> {
        self.keys
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    /// Whether any file a certificate was read from has changed since.
    pub fn files_changed(&self) -> bool {
        self.files
            .iter()
            .any(|(path, stamp)| FileStamp::of(path) != *stamp)
    }

    fn load_one(&mut self, config: &CertificateConfig) -> Result<CertifiedKey, String> {
        let chain_pem = self.part(
            config.certificate_pem.as_deref(),
            config.certificate_file.as_deref(),
            "certificate",
        )?;
        let key_pem = self.part(
            config.private_key_pem.as_deref(),
            config.private_key_file.as_deref(),
            "private key",
        )?;
        certified_key(&chain_pem, &key_pem)
    }

    /// Reads a chain and key from files, stamping both (a missing file too, so its
    /// appearance counts as a change). `Ok(None)` when the chain file does not exist.
    pub(crate) fn load_files(
        &mut self,
        chain: &Path,
        key: &Path,
    ) -> Result<Option<CertifiedKey>, String> {
        if !chain.exists() {
            self.files.push((chain.to_owned(), None));
            self.files.push((key.to_owned(), FileStamp::of(key)));
            return Ok(None);
        }
        let chain_pem = self.part(None, Some(chain), "certificate")?;
        let key_pem = self.part(None, Some(key), "private key")?;
        certified_key(&chain_pem, &key_pem).map(Some)
    }

    /// The PEM bytes of one part: inline text, or the file's contents (stamped).
    fn part(
        &mut self,
        inline: Option<&str>,
        file: Option<&Path>,
        what: &str,
    ) -> Result<Vec<u8>, String> {
        match (inline, file) {
            (Some(text), None) => Ok(text.as_bytes().to_vec()),
            (None, Some(path)) => {
                let stamp = FileStamp::of(path);
                let bytes = std::fs::read(path)
                    .map_err(|err| format!("reading {what} file {}: {err}", path.display()))?;
                self.files.push((path.to_owned(), stamp));
                Ok(bytes)
            }
            (Some(_), Some(_)) => Err(format!("{what} is given both inline and as a file")),
            (None, None) => Err(format!("{what} is missing")),
        }
    }
}

/// A key pair from PEM: the chain (leaf first) and its private key.
fn certified_key(chain_pem: &[u8], key_pem: &[u8]) -> Result<CertifiedKey, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain_pem)
        .collect::<Result<_, _>>()
        .map_err(|err| format!("certificate is not PEM: {err}"))?;
    if chain.is_empty() {
        return Err("no PEM certificate found".to_owned());
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|err| format!("no PEM private key found: {err}"))?;
    let provider = crate::crypto_provider();
    CertifiedKey::from_der(chain, key, &provider).map_err(|err| format!("key pair refused: {err}"))
}
