//! The certificate each ACME listener serves, decided when a snapshot is compiled:
//! the pair a manager wrote under the state directory if it loads, else the last pair
//! that loaded for that name (a pair caught between its key and its chain being
//! replaced does not load), else a self-signed stand-in. The files are stamped in the
//! snapshot's `CertificateStore` either way, so a pair written or renewed later is
//! swapped in by the certificate poll like any certificate file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use culvert_acme::{CertificatePaths, Challenges, Http01Challenges, TlsAlpnChallenges};
use rustls::sign::CertifiedKey;

use super::placeholder;
use crate::tls::CertificateStore;

/// What compiling a snapshot needs from ACME; shared by every compile of the process.
#[derive(Debug)]
pub struct AcmeCertificates {
    state_dir: PathBuf,
    challenges: Challenges,
    /// By lower-case name: the certificate served last (issued, or the stand-in).
    served: Mutex<HashMap<String, Arc<CertifiedKey>>>,
}

impl AcmeCertificates {
    /// Certificates read from under `state_dir`, challenges answered from `challenges`.
    pub fn new(state_dir: impl Into<PathBuf>, challenges: Challenges) -> Self {
        Self {
            state_dir: state_dir.into(),
            challenges,
            served: Mutex::new(HashMap::new()),
        }
    }

    /// Where certificates are kept.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The challenge stores, shared with the managers.
    pub fn challenges(&self) -> &Challenges {
        &self.challenges
    }

    /// The HTTP-01 answers clear-text listeners serve.
    pub fn http01(&self) -> &Http01Challenges {
        self.challenges.http01()
    }

    /// The TLS-ALPN-01 certificates ACME listeners' addresses present.
    pub fn tls_alpn01(&self) -> &TlsAlpnChallenges {
        self.challenges.tls_alpn01()
    }

    /// The certificate to serve for `name` now, its files stamped in `store`.
    pub(crate) fn certificate_for(
        &self,
        name: &str,
        store: &mut CertificateStore,
    ) -> Result<Arc<CertifiedKey>, String> {
        let name = name.to_ascii_lowercase();
        let paths = CertificatePaths::new(&self.state_dir, &name);
        let loaded = store.load_files(&paths.certificate, &paths.private_key);
        let mut served = self.served.lock().unwrap_or_else(PoisonError::into_inner);
        match loaded {
            Ok(Some(key)) => {
                let key = Arc::new(key);
                served.insert(name, Arc::clone(&key));
                return Ok(key);
            }
            Ok(None) => {}
            Err(reason) => {
                tracing::warn!(
                    name = %name,
                    path = %paths.certificate.display(),
                    %reason,
                    "acme certificate files do not load; serving the previous certificate"
                );
            }
        }
        if let Some(previous) = served.get(&name) {
            return Ok(Arc::clone(previous));
        }
        let stand_in = placeholder::self_signed(&name)?;
        served.insert(name, Arc::clone(&stand_in));
        Ok(stand_in)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test")]

    use std::sync::Arc;

    use super::AcmeCertificates;
    use crate::tls::CertificateStore;

    fn state_dir(test: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("culvert-proxy-acme-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// A self-signed pair for `name` as PEM: (chain, key).
    fn pair(name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec![name.to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn stand_in_until_the_files_exist_then_the_files_and_a_changed_stamp() {
        let dir = state_dir("stand-in");
        let acme = AcmeCertificates::new(&dir, culvert_acme::Challenges::new());
        let mut store = CertificateStore::default();
        let first = acme
            .certificate_for("WWW.example.test", &mut store)
            .unwrap();
        let again = acme
            .certificate_for("www.example.test", &mut CertificateStore::default())
            .unwrap();
        assert!(Arc::ptr_eq(&first, &again), "one stand-in per name");
        assert!(!store.files_changed());

        let (chain, key) = pair("www.example.test");
        let files = dir.join("www.example.test");
        std::fs::create_dir_all(&files).unwrap();
        std::fs::write(files.join("tls.key"), &key).unwrap();
        std::fs::write(files.join("tls.crt"), &chain).unwrap();
        assert!(
            store.files_changed(),
            "the issued pair must trigger a reload"
        );

        let mut store = CertificateStore::default();
        let issued = acme
            .certificate_for("www.example.test", &mut store)
            .unwrap();
        assert!(!Arc::ptr_eq(&issued, &first));
        let on_disk = rustls_pki_types::pem::PemObject::from_pem_slice(chain.as_bytes());
        let on_disk: rustls_pki_types::CertificateDer<'_> = on_disk.unwrap();
        assert_eq!(issued.cert[0], on_disk);
        assert!(!store.files_changed());

        // A key replaced before its chain: the pair does not load; the last one stays.
        let (_, other_key) = pair("www.example.test");
        std::fs::write(files.join("tls.key"), other_key).unwrap();
        let kept = acme
            .certificate_for("www.example.test", &mut CertificateStore::default())
            .unwrap();
        assert!(Arc::ptr_eq(&kept, &issued));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
