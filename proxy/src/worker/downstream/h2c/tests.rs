use super::*;

fn upgrade_request(extra: &[(&str, &str)]) -> Request<()> {
    let mut request = Request::get("/up?x=1")
        .header("host", "up.example")
        .header("connection", "Upgrade, HTTP2-Settings")
        .header("upgrade", "h2c");
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    request.body(()).unwrap()
}

/// The literal fields of a header block written by [`literal`] (short strings).
fn fields(mut block: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let string = |block: &mut &[u8]| {
        let length = usize::from(block[0]);
        assert!(length < 0x7f, "short strings only");
        let text = String::from_utf8(block[1..=length].to_vec()).unwrap();
        *block = &block[1 + length..];
        text
    };
    while !block.is_empty() {
        assert_eq!(block[0], 0x00, "literal without indexing, new name");
        block = &block[1..];
        let name = string(&mut block);
        let value = string(&mut block);
        out.push((name, value));
    }
    out
}

#[test]
fn an_upgrade_is_taken_only_when_it_can_be_done_cleanly() {
    let settings = ("http2-settings", "AAMAAABkAAQCAAAAAAIAAAAA");
    assert!(wants_h2c(&upgrade_request(&[settings]), BodyFraming::Empty));
    assert!(wants_h2c(
        &upgrade_request(&[("http2-settings", "")]),
        BodyFraming::Empty
    ));
    // With a body, the request would have to be sent whole before the switch.
    assert!(!wants_h2c(
        &upgrade_request(&[settings]),
        BodyFraming::Length(3)
    ));
    assert!(!wants_h2c(
        &upgrade_request(&[settings]),
        BodyFraming::Chunked
    ));
    assert!(!wants_h2c(&upgrade_request(&[]), BodyFraming::Empty));
    assert!(!wants_h2c(
        &upgrade_request(&[settings, settings]),
        BodyFraming::Empty
    ));
    // Not base64url, or not a whole number of six-byte settings.
    for bad in ["AAMA*ABk", "AAMAAA", "A"] {
        let request = upgrade_request(&[("http2-settings", bad)]);
        assert!(!wants_h2c(&request, BodyFraming::Empty), "{bad}");
    }
    let mut http10 = upgrade_request(&[settings]);
    *http10.version_mut() = Version::HTTP_10;
    assert!(!wants_h2c(&http10, BodyFraming::Empty));
    let mut no_connection = upgrade_request(&[settings]);
    no_connection.headers_mut().remove(header::CONNECTION);
    assert!(!wants_h2c(&no_connection, BodyFraming::Empty));
}

#[test]
fn stream_one_carries_the_request_without_its_connection_fields() {
    let request = upgrade_request(&[
        ("http2-settings", ""),
        ("x-test", "yes"),
        ("te", "trailers"),
        ("keep-alive", "timeout=5"),
    ]);
    let frame = stream_one(&request).unwrap();
    let length = usize::from(frame[0]) << 16 | usize::from(frame[1]) << 8 | usize::from(frame[2]);
    assert_eq!(length, frame.len() - FRAME_HEADER);
    assert_eq!(frame[3], HEADERS);
    assert_eq!(frame[4], END_STREAM | END_HEADERS);
    assert_eq!(frame[5..9], 1u32.to_be_bytes());
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    };
    assert_eq!(
        fields(&frame[FRAME_HEADER..]),
        pairs(&[
            (":method", "GET"),
            (":scheme", "http"),
            (":authority", "up.example"),
            (":path", "/up?x=1"),
            ("x-test", "yes"),
            ("te", "trailers"),
        ])
    );
    let mut gzip = upgrade_request(&[("http2-settings", ""), ("te", "gzip")]);
    gzip.headers_mut()
        .append(header::CONNECTION, "x-hop".parse().unwrap());
    gzip.headers_mut().insert("x-hop", "1".parse().unwrap());
    let names: Vec<String> = fields(&stream_one(&gzip).unwrap()[FRAME_HEADER..])
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(names, [":method", ":scheme", ":authority", ":path"]);
}

#[test]
fn long_strings_and_oversized_heads() {
    let mut block = Vec::new();
    string(&mut block, &[b'a'; 300]);
    // 300 = 127 + 173; 173 = 0b1010_1101 -> 0xad & 0x7f | 0x80, then 1.
    assert_eq!(block[..3], [0x7f, 0xad, 0x01]);
    assert_eq!(block.len(), 3 + 300);
    let huge = "v".repeat(MAX_FRAME);
    let request = upgrade_request(&[("http2-settings", ""), ("x-big", huge.as_str())]);
    assert!(stream_one(&request).is_none());
}

#[tokio::test]
async fn stream_one_goes_after_the_clients_first_settings_frame() {
    let settings = [0, 0, 6, SETTINGS, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100];
    let mut sent = PREFACE.to_vec();
    sent.extend_from_slice(&settings);
    sent.extend_from_slice(b"rest");
    // What came with the upgrade request, and what is still to be read.
    let (early, late) = sent.split_at(10);
    let mut io: &[u8] = late;
    let read = after_client_preface(&mut io, BytesMut::from(early), b"STREAM1")
        .await
        .unwrap();
    let mut expected = PREFACE.to_vec();
    expected.extend_from_slice(&settings);
    expected.extend_from_slice(b"STREAM1rest");
    assert_eq!(read, expected);

    // Not a preface: passed on untouched, for the HTTP/2 server to refuse.
    let mut io: &[u8] = b"GET / HTTP/1.1\r\n\r\n";
    let read = after_client_preface(&mut io, BytesMut::new(), b"STREAM1").await;
    assert_eq!(read.unwrap(), &b"GET / HTTP/1.1\r\n\r\n"[..]);
    // A preface whose first frame is not SETTINGS.
    let mut ping = PREFACE.to_vec();
    ping.extend_from_slice(&[0, 0, 8, 0x6, 0, 0, 0, 0, 0]);
    let mut io: &[u8] = &ping;
    let read = after_client_preface(&mut io, BytesMut::new(), b"STREAM1").await;
    assert_eq!(read.unwrap(), ping);
    // The client closed halfway through its preface.
    let mut io: &[u8] = &PREFACE[..20];
    assert!(
        after_client_preface(&mut io, BytesMut::new(), b"S")
            .await
            .is_none()
    );
}
