//! The certificate and key of one managed certificate on disk:
//! `<state_dir>/<first name>/tls.crt` (PEM chain, leaf first, 0644) and `tls.key` (PEM
//! PKCS#8, 0600). Reads them back and judges them (names, key, dates) with the checks a
//! fresh certificate from the server also has to pass before it is written.

use std::path::{Path, PathBuf};

use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use crate::Error;
use crate::files::{self, PRIVATE, PUBLIC};
use crate::validity::{self, Validity};

/// Where one certificate's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificatePaths {
    /// The directory holding both files: `<state_dir>/<first name>`.
    pub dir: PathBuf,
    /// The PEM chain, leaf first: `tls.crt`.
    pub certificate: PathBuf,
    /// The PEM PKCS#8 private key: `tls.key`, mode 0600.
    pub private_key: PathBuf,
}

impl CertificatePaths {
    /// Where a manager keeps the certificate whose first name is `first_name` (lower
    /// case), so a reader can find the files without a [`Manager`](crate::Manager).
    pub fn new(state_dir: &Path, first_name: &str) -> Self {
        let dir = state_dir.join(first_name);
        Self {
            certificate: dir.join("tls.crt"),
            private_key: dir.join("tls.key"),
            dir,
        }
    }
}

/// What is on disk: nothing (`Ok(None)`), a usable pair with its dates, or a reason it
/// cannot be used (`Err`). An IO failure other than a missing file is the outer error.
pub(crate) fn inspect(
    paths: &CertificatePaths,
    names: &[String],
) -> Result<Result<Option<Validity>, String>, Error> {
    let chain = files::read_if_present(&paths.certificate)?;
    let key = files::read_if_present(&paths.private_key)?;
    Ok(match (chain, key) {
        (None, None) => Ok(None),
        (Some(_), None) => Err("tls.key is missing".to_owned()),
        (None, Some(_)) => Err("tls.crt is missing".to_owned()),
        (Some(chain), Some(key)) => check_pair(&chain, &key, names).map(Some),
    })
}

/// Checks that `chain_pem` starts with a certificate for every name, whose key is
/// `key_pem`, and returns its validity.
pub(crate) fn check_pair(
    chain_pem: &[u8],
    key_pem: &[u8],
    names: &[String],
) -> Result<Validity, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain_pem)
        .collect::<Result<_, _>>()
        .map_err(|err| format!("certificate chain is not PEM: {err}"))?;
    let Some(leaf) = chain.first() else {
        return Err("no certificate in the chain".to_owned());
    };
    let validity = validity::validity(leaf).map_err(|err| err.to_string())?;
    let end_entity =
        webpki::EndEntityCert::try_from(leaf).map_err(|err| format!("leaf certificate: {err}"))?;
    for name in names {
        let server_name =
            ServerName::try_from(name.as_str()).map_err(|err| format!("{name}: {err}"))?;
        end_entity
            .verify_is_valid_for_subject_name(&server_name)
            .map_err(|_| format!("the certificate does not cover {name}"))?;
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|err| format!("private key is not PEM: {err}"))?;
    CertifiedKey::from_der(chain, key, &culvert_tls::crypto_provider())
        .map_err(|err| format!("certificate and key do not go together: {err}"))?;
    Ok(validity)
}

/// Writes the key, then the chain, each replacing its file in one step. A reader that
/// loads the pair between the two renames finds a key that does not match the chain
/// (rustls refuses such a pair) and has the new chain on its next poll.
pub(crate) fn store(
    paths: &CertificatePaths,
    chain_pem: &[u8],
    key_pem: &[u8],
) -> Result<(), Error> {
    files::create_dir(&paths.dir)?;
    files::write_atomic(&paths.private_key, key_pem, PRIVATE)?;
    files::write_atomic(&paths.certificate, chain_pem, PUBLIC)
}

#[cfg(test)]
mod tests;
