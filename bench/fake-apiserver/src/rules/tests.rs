use super::{Matcher, RequestFacts, Verb};

fn facts(verb: Verb, subresource: Option<&str>) -> RequestFacts {
    RequestFacts {
        verb,
        resource: "httproutes".to_owned(),
        kind: "HTTPRoute".to_owned(),
        namespace: Some("default".to_owned()),
        name: Some("web".to_owned()),
        subresource: subresource.map(str::to_owned),
    }
}

#[test]
fn matchers_select_by_every_field_they_set() {
    let status_writes = Matcher::any()
        .verb(Verb::Update)
        .resource("HTTPRoute")
        .namespace("default")
        .name("web")
        .subresource("status");
    assert!(status_writes.matches(&facts(Verb::Update, Some("status"))));
    assert!(!status_writes.matches(&facts(Verb::Update, None)));
    assert!(!status_writes.matches(&facts(Verb::Patch, Some("status"))));
    assert!(
        !status_writes
            .clone()
            .name("other")
            .matches(&facts(Verb::Update, Some("status")))
    );
    let main_only = Matcher::any().resource("httproutes").subresource("");
    assert!(main_only.matches(&facts(Verb::Get, None)));
    assert!(!main_only.matches(&facts(Verb::Get, Some("status"))));
    assert!(Matcher::any().matches(&facts(Verb::Delete, None)));
    assert!(
        !Matcher::any()
            .resource("gateways")
            .matches(&facts(Verb::Get, None))
    );
}
