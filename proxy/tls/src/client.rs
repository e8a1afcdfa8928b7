//! rustls client settings on [`crate::crypto_provider`]: the safe default protocol
//! versions, the caller's roots, no client certificate.

use rustls::{ClientConfig, RootCertStore};

use crate::{Error, crypto_provider};

/// Client settings trusting `roots`, on the process's provider, without a client
/// certificate.
pub fn client_config(roots: RootCertStore) -> Result<ClientConfig, Error> {
    Ok(ClientConfig::builder_with_provider(crypto_provider())
        .with_safe_default_protocol_versions()
        .map_err(Error::Protocols)?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_use_the_process_provider() {
        let config = client_config(RootCertStore::empty()).unwrap();
        assert!(std::sync::Arc::ptr_eq(
            config.crypto_provider(),
            &crypto_provider()
        ));
    }
}
