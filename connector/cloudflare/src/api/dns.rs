//! `/zones/{zone}/dns_records`: listing, creating, replacing and deleting records.

use http::Method;
use serde::Deserialize;

use super::RECORD_PAGE;
use crate::client::Call;
use crate::model::{DnsRecord, NewDnsRecord};
use crate::{Client, Error, RecordId, ZoneId};

#[derive(Deserialize)]
struct Deleted {
    id: RecordId,
}

fn records_path(zone: &ZoneId) -> String {
    format!("/zones/{zone}/dns_records")
}

impl Client {
    /// The zone's records, only those of `record_type` and exactly `name` when given.
    pub async fn dns_records(
        &self,
        zone: &ZoneId,
        record_type: Option<&str>,
        name: Option<&str>,
    ) -> Result<Vec<DnsRecord>, Error> {
        let mut call = Call::new(Method::GET, records_path(zone));
        if let Some(record_type) = record_type {
            call = call.query("type", record_type);
        }
        if let Some(name) = name {
            call = call.query("name", name);
        }
        self.list_all(call, RECORD_PAGE).await
    }

    /// Creates a record. A name already held by a conflicting or identical record fails
    /// with [`Error::is_conflict`] (codes 81053, 81058). Never retried once sent.
    pub async fn create_dns_record(
        &self,
        zone: &ZoneId,
        record: &NewDnsRecord,
    ) -> Result<DnsRecord, Error> {
        let call = Call::new(Method::POST, records_path(zone)).json(record)?;
        Ok(self.call(&call).await?.result)
    }

    /// Replaces a record whole.
    pub async fn update_dns_record(
        &self,
        zone: &ZoneId,
        id: &RecordId,
        record: &NewDnsRecord,
    ) -> Result<DnsRecord, Error> {
        let call = Call::new(Method::PUT, format!("{}/{id}", records_path(zone))).json(record)?;
        Ok(self.call(&call).await?.result)
    }

    /// Deletes a record; the answer is its id.
    pub async fn delete_dns_record(&self, zone: &ZoneId, id: &RecordId) -> Result<RecordId, Error> {
        let call = Call::new(Method::DELETE, format!("{}/{id}", records_path(zone)));
        let deleted: Deleted = self.call(&call).await?.result;
        Ok(deleted.id)
    }
}
