//! The ACME account: created once per directory, its credentials (key included) kept in
//! `<state_dir>/account-<directory>.json` (mode 0600) and reused on every later start.
//! One file per directory URL, so moving from a staging to a production directory gets a
//! new account instead of presenting the old one where it does not exist.

use std::path::{Path, PathBuf};

use instant_acme::{Account, AccountCredentials, NewAccount};

use crate::Error;
use crate::config::Settings;
use crate::files::{self, PRIVATE, blocking};
use crate::http::AcmeHttp;

/// Where the account for `directory_url` is kept under `state_dir`.
pub(crate) fn path(state_dir: &Path, directory_url: &str) -> PathBuf {
    let tail = directory_url
        .strip_prefix("https://")
        .unwrap_or(directory_url);
    let name: String = tail
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    state_dir.join(format!("account-{name}.json"))
}

/// The stored account, or a new one registered now and stored.
pub(crate) async fn load_or_create(settings: &Settings) -> Result<Account, Error> {
    let path = path(&settings.state_dir, &settings.directory_url);
    let stored = {
        let path = path.clone();
        blocking(move || files::read_if_present(&path)).await??
    };
    let http = Box::new(AcmeHttp::new(settings)?);
    if let Some(bytes) = stored {
        let credentials = credentials(&path, &bytes, &settings.directory_url)?;
        let account = Account::builder_with_http(http)
            .from_credentials(credentials)
            .await?;
        tracing::debug!(account = account.id(), "acme account loaded");
        return Ok(account);
    }
    let contacts: Vec<&str> = settings.contacts.iter().map(String::as_str).collect();
    let new_account = NewAccount {
        contact: &contacts,
        terms_of_service_agreed: true,
        only_return_existing: false,
    };
    let (account, credentials) = Account::builder_with_http(http)
        .create(&new_account, settings.directory_url.clone(), None)
        .await?;
    let bytes = serde_json::to_vec_pretty(&credentials).map_err(|err| Error::State {
        path: path.clone(),
        reason: err.to_string(),
    })?;
    let state_dir = settings.state_dir.clone();
    blocking(move || {
        files::create_dir(&state_dir)?;
        files::write_atomic(&path, &bytes, PRIVATE)
    })
    .await??;
    tracing::info!(account = account.id(), "acme account created");
    Ok(account)
}

/// Parses stored credentials and checks they belong to `directory_url`.
fn credentials(
    path: &Path,
    bytes: &[u8],
    directory_url: &str,
) -> Result<AccountCredentials, Error> {
    let unusable = |reason: String| Error::State {
        path: path.to_owned(),
        reason,
    };
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|err| unusable(err.to_string()))?;
    let directory = value.get("directory").and_then(serde_json::Value::as_str);
    if directory != Some(directory_url) {
        return Err(unusable(format!(
            "it is for directory {directory:?}, not {directory_url:?}"
        )));
    }
    serde_json::from_value(value).map_err(|err| unusable(err.to_string()))
}

#[cfg(test)]
mod tests;
