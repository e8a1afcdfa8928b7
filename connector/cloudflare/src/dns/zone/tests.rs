use super::*;

fn zones() -> Zones {
    Zones::new([
        zone("z-example", "example.com"),
        zone("z-sub", "Sub.Example.com."),
        zone("z-org", "example.org"),
        zone("z-dup", "example.org"),
        zone("z-empty", ""),
    ])
}

fn zone(id: &str, name: &str) -> Zone {
    Zone {
        id: id.to_owned(),
        name: name.to_owned(),
    }
}

#[test]
fn zone_by_longest_label_suffix() {
    let zones = zones();
    let cases = [
        // apex
        ("example.com", Some("z-example")),
        ("sub.example.com", Some("z-sub")),
        // one level and deep
        ("app.example.com", Some("z-example")),
        ("a.b.c.example.com", Some("z-example")),
        ("a.b.sub.example.com", Some("z-sub")),
        // wildcards belong to the zone of the name after the `*`
        ("*.example.com", Some("z-example")),
        ("*.sub.example.com", Some("z-sub")),
        ("*.a.example.com", Some("z-example")),
        ("*.a.sub.example.com", Some("z-sub")),
        // trailing dot and case
        ("APP.Example.Com.", Some("z-example")),
        ("x.SUB.example.com.", Some("z-sub")),
        // label-wise, not by characters
        ("notexample.com", None),
        ("xsub.example.com", Some("z-example")),
        // the first of two zones with one name
        ("www.example.org", Some("z-org")),
        // no zone
        ("example.net", None),
        ("com", None),
        ("", None),
        ("*.", None),
        ("a..example.com", None),
    ];
    for (hostname, want) in cases {
        let got = zones.zone_for(hostname).map(|zone| zone.id.as_str());
        assert_eq!(got, want, "{hostname}");
    }
}

#[test]
fn duplicates_and_empty_names_are_dropped() {
    let zones = zones();
    assert_eq!(zones.len(), 3);
    let ids: Vec<&str> = zones.iter().map(|zone| zone.id.as_str()).collect();
    assert_eq!(ids, ["z-example", "z-sub", "z-org"]);
    assert!(Zones::new([]).is_empty());
}
