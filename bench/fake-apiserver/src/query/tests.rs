use super::url_query;

#[test]
fn queries_decode_as_kube_encodes_them() {
    let q = url_query(
        "&limit=500&fieldSelector=metadata.name%3Dpod%3D1&labelSelector=app+in+%28a%2Cb%29&x=%2",
    );
    assert_eq!(q["limit"], "500");
    assert_eq!(q["fieldSelector"], "metadata.name=pod=1");
    assert_eq!(q["labelSelector"], "app in (a,b)");
    assert_eq!(q["x"], "%2", "a truncated escape stays as sent");
}
