//! `culvert route` end to end: the real binary on the shipped example config, so the
//! README's run command keeps working.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a panic is the failure report"
)]

use std::path::Path;
use std::process::Command;

fn culvert_route(args: &[&str]) -> (bool, String, String) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/examples/routes.json");
    let output = Command::new(env!("CARGO_BIN_EXE_culvert"))
        .arg("route")
        .arg("--config")
        .arg(example)
        .args(["--port", "8080"])
        .args(args)
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn weighted_backend_is_chosen_by_the_random_number() {
    let (ok, stable, _) = culvert_route(&[
        "--host",
        "www.example.com",
        "--path",
        "/api/v1/users",
        "--random",
        "0.5",
    ]);
    assert!(ok);
    assert!(stable.contains("rule:     0 (api)"), "{stable}");
    assert!(
        stable.contains("backend:  shop/api:8080 (weight 90 of 100)"),
        "{stable}"
    );
    let (_, canary, _) = culvert_route(&[
        "--host",
        "www.example.com",
        "--path",
        "/api/v1/users",
        "--random",
        "0.95",
    ]);
    assert!(
        canary.contains("backend:  shop/api-canary:8080 (weight 10 of 100)"),
        "{canary}"
    );
}

#[test]
fn redirect_answers_with_a_location() {
    let (ok, out, _) = culvert_route(&[
        "--host",
        "www.example.com:8080",
        "--path",
        "/old-shop/cart?id=3",
    ]);
    assert!(ok);
    assert!(
        out.contains("answer:   308 Location: https://www.example.com/shop/cart?id=3"),
        "{out}"
    );
}

#[test]
fn rewrite_and_regex_and_grpc_routes_resolve() {
    let (_, assets, _) = culvert_route(&["--host", "WWW.example.com", "--path", "/static/app.js"]);
    assert!(
        assets.contains("rewrite:  path /shop-assets/app.js"),
        "{assets}"
    );
    let (_, docs, _) = culvert_route(&[
        "--host",
        "docs.example.com",
        "--path",
        "/v2/install-guide.html",
    ]);
    assert!(docs.contains("HTTPRoute docs/manuals"), "{docs}");
    let (_, grpc, _) = culvert_route(&[
        "--host",
        "grpc.example.com",
        "--method",
        "POST",
        "--path",
        "/shop.Inventory/Reserve",
        "-H",
        "content-type: application/grpc",
    ]);
    assert!(grpc.contains("GRPCRoute shop/inventory"), "{grpc}");
}

#[test]
fn invalid_backend_answers_500_and_misses_answer_404() {
    let (_, invalid, _) = culvert_route(&["--host", "a.pay.example.com", "--path", "/v1/refund"]);
    assert!(invalid.contains("answer:   500"), "{invalid}");
    let (ok, miss, _) = culvert_route(&["--host", "nobody.example.org", "--path", "/"]);
    assert!(ok);
    assert!(miss.contains("no match: no route matches"), "{miss}");
}

#[test]
fn bad_input_is_a_clear_error_not_a_panic() {
    let (ok, _, err) = culvert_route(&["--host", "www.example.com", "--path", "/a%zz"]);
    assert!(!ok);
    assert!(err.contains("malformed percent-escape"), "{err}");
    let (ok, _, err) = culvert_route(&["--host", "www.example.com", "-H", "no-colon"]);
    assert!(!ok);
    assert!(err.contains("is not `name: value`"), "{err}");
}
