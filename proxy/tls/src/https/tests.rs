use bytes::Bytes;
use http_body_util::Full;

use super::*;

#[test]
fn a_client_is_built_outside_a_runtime() {
    let config = crate::client_config(rustls::RootCertStore::empty()).unwrap();
    let options = HttpsOptions {
        allow_http: true,
        nodelay: true,
        ..HttpsOptions::new(Duration::from_secs(1))
    };
    let _client: HttpsClient<Full<Bytes>> = https_client(config, options);
}
