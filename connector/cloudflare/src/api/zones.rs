//! `GET /zones`: an account's zones.

use http::Method;

use super::LIST_PAGE;
use crate::client::Call;
use crate::model::Zone;
use crate::{AccountId, Client, Error};

impl Client {
    /// The account's active zones, only the one called `name` when given.
    pub async fn zones(&self, account: &AccountId, name: Option<&str>) -> Result<Vec<Zone>, Error> {
        let mut call =
            Call::new(Method::GET, "/zones".to_owned()).query("account.id", account.as_str());
        if let Some(name) = name {
            call = call.query("name", name);
        }
        call = call.query("status", "active");
        self.list_all(call, LIST_PAGE).await
    }
}
