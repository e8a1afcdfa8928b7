//! The client side of a worker: each accepted connection (TLS, protocol
//! detection, `connection`; the ClientHello read of passthrough addresses,
//! `client_hello`), our HTTP/1.x server (`http1`), h2c by upgrade (`h2c`),
//! HTTP/2 through hyper with its idle timeout (`idle`), and the tunnel's entry
//! (`tunnel`). Every request goes to the exchange (`worker::exchange`); nothing here
//! routes or forwards.

mod client_hello;
pub(crate) mod connection;
mod h2c;
pub(crate) mod http1;
mod idle;
mod sniff;
pub(crate) mod tunnel;
