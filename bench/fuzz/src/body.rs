//! `body`: message bodies of every framing, fed in pieces of any size.
//!
//! The first byte picks the decoder: the chunked decoder itself, or a
//! [`BodyDecoder`] for a request or response framing (a length takes the next two
//! bytes); the rest of the input is the body as it arrives. Fed whole, one byte at a
//! time and in pieces of a size the input picks, the decoder must yield the same
//! bytes, end the same way and leave the same bytes after the body. A chunked body
//! that decodes must decode again, to the same bytes and trailers, once re-encoded
//! with `encode_chunk_start` / `encode_last_chunk`.

use bytes::BytesMut;
use culvert_wire::{
    BodyDecoder, BodyFraming, Chunk, ChunkedDecoder, ResponseFraming, WireError,
    encode_chunk_start, encode_last_chunk,
};
use http::HeaderMap;

use crate::input::Input;

/// Decodes the body the input describes in pieces of several sizes; panics when the
/// results differ or a chunked body does not survive re-encoding.
pub fn body(data: &[u8]) {
    let mut input = Input::new(data);
    let framing = Framing::pick(&mut input);
    let step = input.below(64) + 2;
    let chunk_size = input.below(32) + 1;
    let wire = input.rest();
    let whole = decode(framing, wire, wire.len().max(1));
    for step in [1, step] {
        let pieces = decode(framing, wire, step);
        assert_eq!(
            pieces, whole,
            "{framing:?} fed {step} bytes at a time differs from fed whole"
        );
    }
    framing.check(&whole, wire.len());
    if framing.is_chunked() {
        if let End::Done(trailers) = &whole.end {
            round_trip(&whole.data, trailers.as_ref(), chunk_size);
        }
    }
}

/// Which decoder reads the body.
#[derive(Debug, Clone, Copy)]
enum Framing {
    /// The chunked decoder on its own.
    Chunked,
    Request(BodyFraming),
    Response(ResponseFraming),
}

impl Framing {
    fn pick(input: &mut Input<'_>) -> Self {
        let choice = input.byte() % 8;
        let length = input.number(2);
        match choice {
            0 => Self::Chunked,
            1 => Self::Request(BodyFraming::Chunked),
            2 => Self::Request(BodyFraming::Length(length)),
            3 => Self::Request(BodyFraming::Empty),
            4 => Self::Response(ResponseFraming::Chunked),
            5 => Self::Response(ResponseFraming::Length(length)),
            6 => Self::Response(ResponseFraming::UntilClose),
            _ => Self::Response(ResponseFraming::Empty),
        }
    }

    fn is_chunked(self) -> bool {
        matches!(
            self,
            Self::Chunked
                | Self::Request(BodyFraming::Chunked)
                | Self::Response(ResponseFraming::Chunked)
        )
    }

    fn length(self) -> Option<u64> {
        match self {
            Self::Request(BodyFraming::Length(n)) | Self::Response(ResponseFraming::Length(n)) => {
                Some(n)
            }
            Self::Request(BodyFraming::Empty) | Self::Response(ResponseFraming::Empty) => Some(0),
            _ => None,
        }
    }

    /// What a decoded body must look like for this framing, from `len` input bytes.
    fn check(self, decoded: &Decoded, len: usize) {
        let data_len = decoded.data.len();
        assert!(
            data_len + decoded.left.len() <= len,
            "more bytes out than in"
        );
        match (self.length(), &decoded.end) {
            (Some(length), End::Done(None)) => {
                assert_eq!(data_len as u64, length, "a sized body ends at its length");
            }
            (Some(length), End::Failed(WireError::Truncated)) => {
                assert!((data_len as u64) < length, "a whole sized body cut short");
            }
            (Some(_), end) => panic!("{self:?} ended with {end:?}"),
            (None, _) if matches!(self, Self::Response(ResponseFraming::UntilClose)) => {
                assert_eq!(data_len, len, "a body until close is every byte");
                assert_eq!(decoded.end, End::Done(None), "a body until close ends");
            }
            (None, _) => {}
        }
    }

    fn decoder(self) -> Decoder {
        match self {
            Self::Chunked => Decoder::Chunked(ChunkedDecoder::default()),
            Self::Request(framing) => Decoder::Body(BodyDecoder::request(framing)),
            Self::Response(framing) => Decoder::Body(BodyDecoder::response(framing)),
        }
    }
}

enum Decoder {
    Chunked(ChunkedDecoder),
    Body(BodyDecoder),
}

impl Decoder {
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Chunk, WireError> {
        match self {
            Self::Chunked(decoder) => decoder.decode(buf),
            Self::Body(decoder) => decoder.decode(buf),
        }
    }

    /// The input ended: `Ok` when that ends the body.
    fn end_of_input(&mut self) -> Result<(), WireError> {
        match self {
            Self::Chunked(_) => Err(WireError::Truncated),
            Self::Body(decoder) => decoder.end_of_input(),
        }
    }
}

/// How a body decoded.
#[derive(Debug, PartialEq, Eq)]
struct Decoded {
    /// The body's bytes, every data step joined: where steps end depends on the
    /// pieces the input came in, and does not matter.
    data: Vec<u8>,
    end: End,
    /// Bytes after the body (the next message).
    left: Vec<u8>,
}

#[derive(Debug, PartialEq, Eq)]
enum End {
    /// The body ended, with these trailers if it had any.
    Done(Option<HeaderMap>),
    Failed(WireError),
}

/// Feeds `wire` `step` bytes at a time, then reports the end of input.
fn decode(framing: Framing, wire: &[u8], step: usize) -> Decoded {
    let mut decoder = framing.decoder();
    let mut buf = BytesMut::new();
    let mut data = Vec::new();
    let mut fed = 0;
    let end = loop {
        match decoder.decode(&mut buf) {
            Ok(Chunk::Data(bytes)) => {
                assert!(!bytes.is_empty(), "{framing:?} yielded empty data");
                data.extend_from_slice(&bytes);
            }
            Ok(Chunk::Trailers(trailers)) => {
                assert!(
                    !trailers.is_empty(),
                    "trailers are reported only with fields"
                );
                break End::Done(Some(trailers));
            }
            Ok(Chunk::End) => break End::Done(None),
            Err(error) => break End::Failed(error),
            Ok(Chunk::Incomplete) if fed == wire.len() => match decoder.end_of_input() {
                Ok(()) => break End::Done(None),
                Err(error) => break End::Failed(error),
            },
            Ok(Chunk::Incomplete) => {
                let next = (fed + step).min(wire.len());
                buf.extend_from_slice(&wire[fed..next]);
                fed = next;
            }
        }
    };
    let mut left = buf.to_vec();
    left.extend_from_slice(&wire[fed..]);
    // After a failure the rest of the stream is not looked at.
    if matches!(end, End::Failed(_)) {
        left.clear();
    }
    Decoded { data, end, left }
}

/// Encodes `data` in chunks of `chunk_size` bytes, then `trailers`, and decodes the
/// result again.
fn round_trip(data: &[u8], trailers: Option<&HeaderMap>, chunk_size: usize) {
    let mut wire = Vec::new();
    for chunk in data.chunks(chunk_size) {
        encode_chunk_start(&mut wire, chunk.len());
        wire.extend_from_slice(chunk);
        wire.extend_from_slice(b"\r\n");
    }
    encode_last_chunk(&mut wire, trailers);
    let again = decode(Framing::Chunked, &wire, wire.len());
    assert_eq!(
        again.data, data,
        "re-encoded chunked body decodes to other bytes"
    );
    assert_eq!(
        again.end,
        End::Done(trailers.filter(|t| !t.is_empty()).cloned()),
        "re-encoded chunked body ends otherwise"
    );
    assert!(
        again.left.is_empty(),
        "re-encoded body left {:?}",
        again.left
    );
}
