//! The one rustls crypto provider: aws-lc-rs with its default suites and groups. A
//! caller that needs other key-exchange groups (the tunnel connector) clones it and
//! changes only those.

use std::sync::{Arc, OnceLock};

use rustls::crypto::CryptoProvider;

/// The process's crypto provider, made once and shared.
pub fn crypto_provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    Arc::clone(PROVIDER.get_or_init(|| {
        #[allow(
            clippy::disallowed_methods,
            reason = "this crate is the one place that names the provider"
        )]
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        Arc::new(provider)
    }))
}

/// Makes [`crypto_provider`] the process default, for code that builds rustls
/// configs without naming a provider (`rustls::ClientConfig::builder()`, libraries).
/// `false` when a default was installed already (by this call before, or by someone
/// else); the one installed first stays.
pub fn install_default() -> bool {
    CryptoProvider::install_default(CryptoProvider::clone(&crypto_provider())).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_provider_is_made_once() {
        assert!(Arc::ptr_eq(&crypto_provider(), &crypto_provider()));
        assert!(!crypto_provider().cipher_suites.is_empty());
    }

    #[test]
    fn the_default_is_installed_once() {
        install_default();
        assert!(!install_default(), "a second install is refused");
        let installed = CryptoProvider::get_default().expect("installed above");
        assert_eq!(
            installed.cipher_suites.len(),
            crypto_provider().cipher_suites.len()
        );
    }
}
