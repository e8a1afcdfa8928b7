//! The objects as JSON for server-side apply, and back.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use super::{autoscaling_spec, render, spec, tunnel_spec};

#[test]
fn apply_documents_carry_api_version_and_kind() {
    let documents = render(&autoscaling_spec()).apply_documents().unwrap();
    let kinds: Vec<(&str, &str)> = documents
        .iter()
        .map(|d| {
            (
                d["apiVersion"].as_str().unwrap(),
                d["kind"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("v1", "Service"),
            ("v1", "Service"),
            ("networking.k8s.io/v1", "NetworkPolicy"),
            ("apps/v1", "Deployment"),
            ("policy/v1", "PodDisruptionBudget"),
            ("autoscaling/v2", "HorizontalPodAutoscaler"),
        ]
    );
    assert_eq!(render(&spec()).apply_documents().unwrap().len(), 5);
    assert_eq!(
        render(&tunnel_spec()).apply_documents().unwrap().len(),
        4,
        "a tunnel plane has no data Service"
    );
}

#[test]
fn json_shape_of_the_fields_that_matter() {
    let documents = render(&autoscaling_spec()).apply_documents().unwrap();
    let service = &documents[0];
    assert_eq!(service["spec"]["clusterIP"], "None");
    assert_eq!(service["spec"]["publishNotReadyAddresses"], true);
    let data = &documents[1];
    assert_eq!(data["spec"]["type"], "LoadBalancer");
    let deployment = &documents[3];
    // Absent, not null: a null would take the field from the HPA on apply.
    assert!(deployment["spec"].get("replicas").is_none());
    assert!(deployment["status"].is_null());
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["automountServiceAccountToken"], false);
    assert_eq!(
        pod["containers"][0]["readinessProbe"]["httpGet"]["port"],
        "control"
    );
    assert_eq!(pod["volumes"][0]["secret"]["defaultMode"], 0o440);
    let owner = &deployment["metadata"]["ownerReferences"][0];
    assert_eq!(owner["blockOwnerDeletion"], true);
    let hpa = &documents[5];
    assert_eq!(
        hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"],
        "50"
    );
    let policy = &documents[2];
    assert_eq!(policy["spec"]["ingress"][1]["ports"][0]["endPort"], 8080);
}

#[test]
fn round_trip_through_json() {
    for spec in [spec(), tunnel_spec(), autoscaling_spec()] {
        let rendered = render(&spec);
        let text = |v: &serde_json::Value| serde_json::to_string(v).unwrap();
        let documents = rendered.apply_documents().unwrap();
        let mut documents = documents.iter();
        let mut next = || text(documents.next().unwrap());
        let service: Service = serde_json::from_str(&next()).unwrap();
        assert_eq!(service, rendered.config_service);
        if let Some(data) = &rendered.data_service {
            let service: Service = serde_json::from_str(&next()).unwrap();
            assert_eq!(&service, data);
        }
        let policy: NetworkPolicy = serde_json::from_str(&next()).unwrap();
        assert_eq!(policy, rendered.network_policy);
        let deployment: Deployment = serde_json::from_str(&next()).unwrap();
        assert_eq!(deployment, rendered.deployment);
        let budget: PodDisruptionBudget = serde_json::from_str(&next()).unwrap();
        assert_eq!(budget, rendered.disruption_budget);
        let hpa: Option<HorizontalPodAutoscaler> = documents
            .next()
            .map(|d| serde_json::from_str(&text(d)).unwrap());
        assert_eq!(hpa, rendered.autoscaler);
    }
}
