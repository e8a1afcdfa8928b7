//! `GET /user/tokens/verify`: whether the client's own token is valid.

use http::Method;

use crate::client::Call;
use crate::model::TokenStatus;
use crate::{Client, Error};

impl Client {
    /// Asks Cloudflare about this client's token. A token Cloudflare does not know
    /// fails with [`Error::is_auth`].
    pub async fn verify_token(&self) -> Result<TokenStatus, Error> {
        let call = Call::new(Method::GET, "/user/tokens/verify".to_owned());
        Ok(self.call(&call).await?.result)
    }
}
