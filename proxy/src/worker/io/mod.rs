//! What a worker's connections are carried on, shared by its client and backend
//! sides: the client transport (TCP or TLS) and how its last bytes leave
//! (`transport`), an IO that first gives back bytes already read (`prefixed`), and
//! reads into a stack buffer so an idle connection keeps none (`stack_read`).

mod prefixed;
pub(crate) mod stack_read;
mod transport;

pub(crate) use prefixed::Prefixed;
pub(crate) use transport::{Io, OverTcp};

/// A client connection handed over after a `101`, with the bytes it sent past the
/// upgrade request.
pub(crate) type Upgraded = Prefixed<Box<dyn Io>>;
