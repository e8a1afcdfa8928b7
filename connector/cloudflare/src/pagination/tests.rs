use super::*;

fn info(page: u32, per_page: u32, total_count: u32, total_pages: u32) -> ResultInfo {
    ResultInfo {
        page,
        per_page,
        count: per_page,
        total_count,
        total_pages,
    }
}

#[test]
fn pages_are_walked_to_the_announced_last_one() {
    let cases = [
        (1, Some(info(1, 2, 5, 3)), 2, Next::Page(2)),
        (2, Some(info(2, 2, 5, 3)), 2, Next::Page(3)),
        (3, Some(info(3, 2, 5, 3)), 1, Next::Done),
        // No result_info: a single answer.
        (1, None, 7, Next::Done),
        // total_pages missing: worked out from total_count and per_page.
        (1, Some(info(1, 2, 5, 0)), 2, Next::Page(2)),
        (3, Some(info(3, 2, 5, 0)), 1, Next::Done),
        // An empty page ends the walk whatever is announced.
        (2, Some(info(2, 2, 50, 25)), 0, Next::Done),
        // A server announcing endless pages is cut off.
        (200, Some(info(200, 1, 10_000, 10_000)), 1, Next::TooMany),
        (199, Some(info(199, 1, 10_000, 10_000)), 1, Next::Page(200)),
    ];
    for (page, info, items, expected) in cases {
        assert_eq!(
            next_page(page, info.as_ref(), items, MAX_PAGES),
            expected,
            "{page} {info:?}"
        );
    }
}
