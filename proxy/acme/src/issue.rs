//! One certificate order, start to finish (RFC 8555 §7.4): new order, an answer
//! published for each pending authorization, the challenges marked ready, a wait until
//! the order is ready (or invalid: the server's reasons are collected into
//! [`Error::Validation`]), a CSR for a fresh P-256 key, and the chain downloaded and
//! checked. Answers are withdrawn when the order is decided, however it ends; nothing
//! here waits longer than the order timeout.

use std::time::Duration;

use instant_acme::{
    Account, AuthorizationStatus, ChallengeType, Identifier, NewOrder, Order, OrderStatus,
    RetryPolicy,
};

use crate::Error;
use crate::challenge::{Challenges, Published};
use crate::config::{ChallengeKind, Settings};
use crate::stored::check_pair;
use crate::validity::Validity;

/// A certificate fresh from the server, checked.
pub(crate) struct Issued {
    pub(crate) chain_pem: String,
    pub(crate) key_pem: String,
    pub(crate) validity: Validity,
}

/// Orders a certificate for `settings.names`, answering by `settings.challenge`.
pub(crate) async fn issue(
    account: &Account,
    settings: &Settings,
    challenges: &Challenges,
) -> Result<Issued, Error> {
    let timeout = settings.order_timeout;
    match tokio::time::timeout(timeout, run_order(account, settings, challenges)).await {
        Ok(result) => result,
        Err(_) => Err(Error::Timeout {
            seconds: timeout.as_secs(),
        }),
    }
}

async fn run_order(
    account: &Account,
    settings: &Settings,
    challenges: &Challenges,
) -> Result<Issued, Error> {
    let identifiers: Vec<Identifier> = settings
        .names
        .iter()
        .map(|name| Identifier::Dns(name.clone()))
        .collect();
    let mut order = account.new_order(&NewOrder::new(&identifiers)).await?;
    let published = answer_challenges(&mut order, settings, challenges).await?;

    let polling = RetryPolicy::new()
        .initial_delay(Duration::from_millis(250))
        .backoff(1.5)
        .timeout(settings.order_timeout);
    let status = match order.poll_ready(&polling).await {
        Ok(status) => status,
        Err(instant_acme::Error::Api(problem)) => {
            drop(published);
            return Err(validation_failure(&mut order, Some(problem.to_string())).await);
        }
        Err(instant_acme::Error::Timeout(_)) => {
            return Err(Error::Timeout {
                seconds: settings.order_timeout.as_secs(),
            });
        }
        Err(err) => return Err(err.into()),
    };
    drop(published);
    if status != OrderStatus::Ready {
        return Err(validation_failure(&mut order, None).await);
    }

    let generate = |what| move |source| Error::Generate { what, source };
    let key = rcgen::KeyPair::generate().map_err(generate("certificate key"))?;
    let mut params =
        rcgen::CertificateParams::new(settings.names.clone()).map_err(generate("csr"))?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    let csr = params.serialize_request(&key).map_err(generate("csr"))?;
    order.finalize_csr(csr.der()).await?;
    let chain_pem = match order.poll_certificate(&polling).await {
        Ok(chain) => chain,
        Err(instant_acme::Error::Timeout(_)) => {
            return Err(Error::Timeout {
                seconds: settings.order_timeout.as_secs(),
            });
        }
        Err(err) => return Err(err.into()),
    };
    let key_pem = key.serialize_pem();
    let validity = check_pair(chain_pem.as_bytes(), key_pem.as_bytes(), &settings.names)
        .map_err(Error::BadCertificate)?;
    Ok(Issued {
        chain_pem,
        key_pem,
        validity,
    })
}

/// Publishes an answer for every pending authorization and tells the server to check it.
async fn answer_challenges(
    order: &mut Order,
    settings: &Settings,
    challenges: &Challenges,
) -> Result<Vec<Published>, Error> {
    let wanted = match settings.challenge {
        ChallengeKind::Http01 => ChallengeType::Http01,
        ChallengeKind::TlsAlpn01 => ChallengeType::TlsAlpn01,
    };
    let mut published = Vec::new();
    let mut authorizations = order.authorizations();
    while let Some(authorization) = authorizations.next().await {
        let mut authorization = authorization?;
        let name = authorization.identifier().to_string().to_ascii_lowercase();
        if !settings.names.contains(&name) {
            return Err(Error::UnexpectedIdentifier(name));
        }
        match authorization.status {
            AuthorizationStatus::Valid => continue,
            AuthorizationStatus::Pending => {}
            status => {
                return Err(Error::Authorization {
                    name,
                    status: format!("{status:?}").to_ascii_lowercase(),
                });
            }
        }
        let Some(mut challenge) = authorization.challenge(wanted.clone()) else {
            return Err(Error::ChallengeNotOffered {
                name,
                kind: settings.challenge.as_str(),
            });
        };
        let key_authorization = challenge.key_authorization();
        published.push(match settings.challenge {
            ChallengeKind::Http01 => challenges.http01().publish(
                challenge.token.clone(),
                key_authorization.as_str().to_owned(),
            ),
            ChallengeKind::TlsAlpn01 => challenges
                .tls_alpn01()
                .publish(&name, key_authorization.digest().as_ref())?,
        });
        challenge.set_ready().await?;
        tracing::debug!(%name, challenge = settings.challenge.as_str(), "acme challenge ready");
    }
    Ok(published)
}

/// The server's reasons for an order that did not become ready: each failed
/// challenge's problem, else the order's own.
async fn validation_failure(order: &mut Order, order_problem: Option<String>) -> Error {
    let mut reasons = Vec::new();
    let mut authorizations = order.authorizations();
    while let Some(Ok(mut authorization)) = authorizations.next().await {
        let name = authorization.identifier().to_string();
        if let Ok(state) = authorization.refresh().await {
            for challenge in &state.challenges {
                if let Some(problem) = &challenge.error {
                    reasons.push(format!("{name}: {problem}"));
                }
            }
        }
    }
    if reasons.is_empty() {
        reasons.push(order_problem.unwrap_or_else(|| "the order became invalid".to_owned()));
    }
    Error::Validation {
        detail: reasons.join("; "),
    }
}
