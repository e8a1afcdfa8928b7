use super::*;

fn expecting(status: &str) -> Expect {
    Expect {
        grpc_status: Some(status.to_owned()),
        ..Expect::default()
    }
}

fn answered(http: u16, grpc: Option<u32>) -> Observed {
    Observed {
        status: Some(http),
        grpc_status: grpc,
        ..Observed::default()
    }
}

#[test]
fn a_read_grpc_status_is_judged_by_its_name() {
    assert_eq!(
        check(&expecting("Unimplemented"), &answered(200, Some(12))),
        Ok(())
    );
    assert_eq!(check(&expecting("OK"), &answered(200, Some(0))), Ok(()));
    let wrong = check(&expecting("OK"), &answered(200, Some(14))).unwrap_err();
    assert!(wrong.contains("Unavailable"), "{wrong}");
}

#[test]
fn without_a_grpc_status_the_http_status_stands_for_one() {
    assert_eq!(
        check(&expecting("Unimplemented"), &answered(404, None)),
        Ok(())
    );
    assert_eq!(
        check(&expecting("Unavailable"), &answered(503, None)),
        Ok(())
    );
    assert!(check(&expecting("OK"), &answered(500, None)).is_err());
    assert_eq!(grpc_code_name(99), "Unknown");
    assert_eq!(grpc_code_name(16), "Unauthenticated");
}

fn served_by_pod(pod: Option<&str>) -> Observed {
    Observed {
        status: Some(200),
        backend_pod: pod.map(str::to_owned),
        ..Observed::default()
    }
}

#[test]
fn backend_pods_are_told_by_the_pod_name_prefix() {
    let expect = Expect {
        backend_pods: Some("infra/infra-backend-v1".to_owned()),
        ..Expect::default()
    };
    assert_eq!(
        check(&expect, &served_by_pod(Some("infra/infra-backend-v1-0"))),
        Ok(())
    );
    for other in [
        Some("infra/infra-backend-v10-0"),
        Some("infra/infra-backend-v1"),
        Some("other/infra-backend-v1-0"),
        None,
    ] {
        assert!(check(&expect, &served_by_pod(other)).is_err(), "{other:?}");
    }
}
