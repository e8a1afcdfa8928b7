use super::Selector;

#[test]
fn every_operator_holds_as_the_api_server_defines_it() {
    let labels = |k: &str| match k {
        "app" => Some("web".to_owned()),
        "tier" => Some("gold".to_owned()),
        _ => None,
    };
    let cases = [
        ("app=web", true),
        ("app==web", true),
        ("app!=web", false),
        ("app in (web, api)", true),
        ("app notin (web)", false),
        ("zone notin (a)", true),
        ("tier", true),
        ("!tier", false),
        ("!zone", true),
        ("app=web,tier=gold", true),
        ("app=web,tier=silver", false),
        ("", true),
    ];
    for (text, expected) in cases {
        let selector = Selector::parse(text).unwrap();
        assert_eq!(selector.matches(labels), expected, "{text}");
    }
    assert!(Selector::parse("app in web").is_err());
}
