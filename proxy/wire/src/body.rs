//! Reading a message body off a buffer that fills as bytes arrive, whatever its
//! framing (RFC 9112 §6): a known length, the chunked coding, or everything until
//! the peer closes. Both sides of the proxy use it: the server for request bodies,
//! the upstream client for response bodies. The caller owns the IO: it decodes what
//! is buffered, reads more on [`Chunk::Incomplete`], and reports the peer's close
//! with [`BodyDecoder::end_of_input`].

use bytes::BytesMut;

use super::{BodyFraming, Chunk, ChunkedDecoder, ResponseFraming, WireError};

/// Where a body being read stands.
#[derive(Debug)]
enum State {
    /// This many bytes still to come (never 0: that is `Done`).
    Length(u64),
    Chunked(ChunkedDecoder),
    /// Everything until the peer closes.
    UntilClose,
    /// Read to its end (or there was none).
    Done,
    /// Malformed, cut off, or abandoned; every later step fails with this.
    Failed(WireError),
}

/// Decodes one message body, step by step.
#[derive(Debug)]
pub struct BodyDecoder {
    state: State,
}

impl BodyDecoder {
    /// The body a request head announced.
    pub fn request(framing: BodyFraming) -> Self {
        Self::with_state(match framing {
            BodyFraming::Empty | BodyFraming::Length(0) => State::Done,
            BodyFraming::Length(length) => State::Length(length),
            BodyFraming::Chunked => State::Chunked(ChunkedDecoder::default()),
        })
    }

    /// The body a response head announced.
    pub fn response(framing: ResponseFraming) -> Self {
        Self::with_state(match framing {
            ResponseFraming::Empty | ResponseFraming::Length(0) => State::Done,
            ResponseFraming::Length(length) => State::Length(length),
            ResponseFraming::Chunked => State::Chunked(ChunkedDecoder::default()),
            ResponseFraming::UntilClose => State::UntilClose,
        })
    }

    /// A body that may no longer be read (its exchange is over).
    pub fn abandoned() -> Self {
        Self::with_state(State::Failed(WireError::Truncated))
    }

    fn with_state(state: State) -> Self {
        Self { state }
    }

    /// The next step, taking the bytes it uses off the front of `buf`. Data is never
    /// empty; an error leaves the decoder failed.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Chunk, WireError> {
        let step = match &mut self.state {
            State::Done => Ok(Chunk::End),
            State::Failed(error) => Err(*error),
            State::Length(_) | State::UntilClose if buf.is_empty() => Ok(Chunk::Incomplete),
            State::Length(remaining) => {
                let take = usize::try_from(*remaining).map_or(buf.len(), |r| r.min(buf.len()));
                *remaining -= take as u64;
                if *remaining == 0 {
                    self.state = State::Done;
                }
                Ok(Chunk::Data(buf.split_to(take).freeze()))
            }
            State::UntilClose => Ok(Chunk::Data(buf.split().freeze())),
            State::Chunked(decoder) => decoder.decode(buf),
        };
        match &step {
            Ok(Chunk::Trailers(_) | Chunk::End) => self.state = State::Done,
            Err(error) => self.state = State::Failed(*error),
            Ok(Chunk::Data(_) | Chunk::Incomplete) => {}
        }
        step
    }

    /// The peer closed its side: the end of a body read until close, else a body cut
    /// short (the decoder is then failed).
    pub fn end_of_input(&mut self) -> Result<(), WireError> {
        match self.state {
            State::UntilClose | State::Done => {
                self.state = State::Done;
                Ok(())
            }
            State::Failed(error) => Err(error),
            State::Length(_) | State::Chunked(_) => {
                self.state = State::Failed(WireError::Truncated);
                Err(WireError::Truncated)
            }
        }
    }

    /// Read to its end.
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    /// Failed: malformed, cut off, or abandoned.
    pub fn is_failed(&self) -> bool {
        matches!(self.state, State::Failed(_))
    }

    /// Bytes still to come, when the framing tells.
    pub fn remaining(&self) -> Option<u64> {
        match self.state {
            State::Length(remaining) => Some(remaining),
            State::Done => Some(0),
            State::Chunked(_) | State::UntilClose | State::Failed(_) => None,
        }
    }
}
