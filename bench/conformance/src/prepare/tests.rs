use super::*;

fn service(name: &str, selector: Option<&str>) -> Value {
    let mut service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "infra"},
        "spec": {"ports": [{"name": "http", "port": 8080, "targetPort": 3000}]}
    });
    if let Some(app) = selector {
        service["spec"]["selector"] = json!({"app": app});
    }
    service
}

fn empty_slice(service: &str, address_type: &str) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": format!("{service}-{address_type}"), "namespace": "infra",
                     "labels": {"kubernetes.io/service-name": service}},
        "addressType": address_type,
        "ports": [{"name": "http", "port": 3000, "protocol": "TCP"}]
    })
}

/// Every endpoint address of `service`'s slices, with the pod it stands for.
fn endpoints_of(resources: &[Value], service: &str) -> Vec<(IpAddr, Option<String>)> {
    let loaded: Vec<Resource> = resources
        .iter()
        .filter_map(|value| Resource::from_value(value.clone()).ok())
        .collect();
    let owners = EndpointOwners::from_resources(&loaded);
    owners
        .services
        .iter()
        .filter(|(_, owner)| owner.as_str() == format!("infra/{service}"))
        .map(|(ip, _)| (*ip, owners.pod(*ip).map(str::to_owned)))
        .collect()
}

#[test]
fn services_that_select_alike_share_pods_and_filled_slices_get_the_named_pods() {
    let mut resources = vec![
        service("app", Some("app")),
        service("headless", Some("app")),
        service("other", Some("other")),
        service("manual", None),
        empty_slice("manual", "IPv4"),
        empty_slice("manual", "IPv6"),
        service("unfilled", None),
        empty_slice("unfilled", "IPv4"),
    ];
    let backed_by = BTreeMap::from([("infra/manual".to_owned(), "infra/app".to_owned())]);
    prepare(
        &mut resources,
        &mut CaSet::new(),
        &mut Clock::default(),
        &backed_by,
    )
    .unwrap();

    let app = endpoints_of(&resources, "app");
    let headless = endpoints_of(&resources, "headless");
    let manual = endpoints_of(&resources, "manual");
    let pod = Some("infra/app-0".to_owned());
    assert_eq!(app.len(), 1);
    assert_eq!((headless.len(), &headless[0].1), (1, &pod));
    assert_eq!(
        (manual.len(), &manual[0].1),
        (1, &pod),
        "only the IPv4 slice is filled"
    );
    assert_eq!(app[0].1, pod);
    assert_eq!(
        endpoints_of(&resources, "other")[0].1.as_deref(),
        Some("infra/other-0")
    );
    assert!(endpoints_of(&resources, "unfilled").is_empty());
    // Each Service's endpoint has an address of its own, so it names the Service.
    let addresses = BTreeSet::from([app[0].0, headless[0].0, manual[0].0]);
    assert_eq!(addresses.len(), 3);
}
