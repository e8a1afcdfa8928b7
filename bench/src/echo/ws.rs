//! WebSocket echo (RFC 6455) over an upgraded HTTP/1.1 connection.
//!
//! Every text or binary message is sent back as one frame of the same type; pings
//! get pongs; a close is answered with a close. Messages are bounded by
//! [`MAX_MESSAGE`]; a protocol violation or an oversized message closes the
//! connection with the matching status code. Extensions are not negotiated, so any
//! RSV bit is an error.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

/// The largest message (all fragments together) the echo accepts.
const MAX_MESSAGE: usize = super::handler::MAX_BODY;

const OP_CONTINUATION: u8 = 0x0;
const OP_TEXT: u8 = 0x1;
const OP_BINARY: u8 = 0x2;
const OP_CLOSE: u8 = 0x8;
const OP_PING: u8 = 0x9;
const OP_PONG: u8 = 0xA;

const CLOSE_PROTOCOL_ERROR: u16 = 1002;
const CLOSE_TOO_BIG: u16 = 1009;

/// One frame as received, payload already unmasked.
#[derive(Debug)]
struct Frame {
    fin: bool,
    opcode: u8,
    payload: Vec<u8>,
}

/// Why reading a frame stopped.
#[derive(Debug)]
enum ReadError {
    /// The stream ended or failed; nothing more can be sent.
    Io,
    /// The peer broke the protocol; close with this code.
    Close(u16),
}

/// Echoes messages until the peer closes, the stream fails or the backend stops.
pub(super) async fn echo<S>(mut io: S, mut stopped: watch::Receiver<()>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    tokio::select! {
        _ = stopped.changed() => {}
        () = echo_frames(&mut io) => {}
    }
}

async fn echo_frames<S>(io: &mut S)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    // The opcode and data of a fragmented message in progress.
    let mut partial: Option<(u8, Vec<u8>)> = None;
    loop {
        let frame = match read_frame(io).await {
            Ok(frame) => frame,
            Err(ReadError::Io) => return,
            Err(ReadError::Close(code)) => {
                let _ = write_frame(io, OP_CLOSE, &code.to_be_bytes()).await;
                return;
            }
        };
        let sent = match frame.opcode {
            OP_CLOSE => {
                // Echo the status code, if any, and stop.
                let code = frame.payload.get(..2).unwrap_or_default();
                let _ = write_frame(io, OP_CLOSE, code).await;
                return;
            }
            OP_PING => write_frame(io, OP_PONG, &frame.payload).await,
            OP_PONG => Ok(()),
            OP_TEXT | OP_BINARY if partial.is_none() => {
                if frame.fin {
                    write_frame(io, frame.opcode, &frame.payload).await
                } else {
                    partial = Some((frame.opcode, frame.payload));
                    Ok(())
                }
            }
            OP_CONTINUATION => match partial.as_mut() {
                Some((_, data)) if data.len() + frame.payload.len() > MAX_MESSAGE => {
                    let _ = write_frame(io, OP_CLOSE, &CLOSE_TOO_BIG.to_be_bytes()).await;
                    return;
                }
                Some((_, data)) => {
                    data.extend_from_slice(&frame.payload);
                    match partial.take() {
                        Some((opcode, data)) if frame.fin => write_frame(io, opcode, &data).await,
                        other => {
                            partial = other;
                            Ok(())
                        }
                    }
                }
                None => {
                    let _ = write_frame(io, OP_CLOSE, &CLOSE_PROTOCOL_ERROR.to_be_bytes()).await;
                    return;
                }
            },
            _ => {
                let _ = write_frame(io, OP_CLOSE, &CLOSE_PROTOCOL_ERROR.to_be_bytes()).await;
                return;
            }
        };
        if sent.is_err() {
            return;
        }
    }
}

async fn read_frame<S: AsyncRead + Unpin>(io: &mut S) -> Result<Frame, ReadError> {
    let mut head = [0u8; 2];
    io.read_exact(&mut head).await.map_err(|_| ReadError::Io)?;
    let fin = head[0] & 0x80 != 0;
    let rsv = head[0] & 0x70;
    let opcode = head[0] & 0x0F;
    let masked = head[1] & 0x80 != 0;
    let len = match head[1] & 0x7F {
        126 => u64::from(io.read_u16().await.map_err(|_| ReadError::Io)?),
        127 => io.read_u64().await.map_err(|_| ReadError::Io)?,
        n => u64::from(n),
    };
    let is_control = opcode & 0x08 != 0;
    // Clients must mask (RFC 6455, section 5.1); control frames are short and whole.
    if rsv != 0 || !masked || (is_control && (!fin || len > 125)) {
        return Err(ReadError::Close(CLOSE_PROTOCOL_ERROR));
    }
    let len = usize::try_from(len)
        .ok()
        .filter(|&len| len <= MAX_MESSAGE)
        .ok_or(ReadError::Close(CLOSE_TOO_BIG))?;
    let mut mask = [0u8; 4];
    io.read_exact(&mut mask).await.map_err(|_| ReadError::Io)?;
    let mut payload = vec![0u8; len];
    io.read_exact(&mut payload)
        .await
        .map_err(|_| ReadError::Io)?;
    for (byte, key) in payload.iter_mut().zip(mask.iter().cycle()) {
        *byte ^= key;
    }
    Ok(Frame {
        fin,
        opcode,
        payload,
    })
}

/// Writes one unmasked, final frame (servers never mask).
pub(super) async fn write_frame<S: AsyncWrite + Unpin>(
    io: &mut S,
    opcode: u8,
    payload: &[u8],
) -> std::io::Result<()> {
    let mut frame = Vec::with_capacity(payload.len() + 10);
    frame.push(0x80 | opcode);
    match payload.len() {
        len @ 0..=125 => frame.push(len as u8),
        len @ 126..=0xFFFF => {
            frame.push(126);
            frame.extend_from_slice(&(len as u16).to_be_bytes());
        }
        len => {
            frame.push(127);
            frame.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    frame.extend_from_slice(payload);
    io.write_all(&frame).await?;
    io.flush().await
}
