//! Capability pointers as the indexes they are on the wire.
//!
//! A payload's content may be a capability pointer: an index into the payload's
//! `capTable`. The `capnp` crate reads and writes such a pointer only through a
//! table of `ClientHook`s, capnp-rpc's live capability objects. The control stream
//! needs the index and nothing more, so the table here holds [`Index`] hooks that
//! stand for their position and refuse every call. None is ever made: the state
//! machines answer with RPC messages, they never call a capability object.

use capnp::any_pointer;
use capnp::capability::{Promise, RemotePromise, Request};
use capnp::private::capability::{
    ClientHook, ParamsHook, PipelineHook, PipelineOp, RequestHook, ResultsHook,
};
use capnp::private::layout::CapTable;
use capnp::traits::{Imbue, ImbueMut};

/// Writes a capability pointer with cap-table index `index` to `content`.
pub(crate) fn write_capability(mut content: any_pointer::Builder<'_>, index: u32) {
    // The crate appends each capability to the table and writes its position, so
    // the table holds `index` empty slots first.
    let mut table: CapTable = std::iter::repeat_with(|| None)
        .take(index as usize)
        .collect();
    let mut content = content.reborrow();
    content.imbue_mut(&mut table);
    content.set_as_capability(Box::new(Index(index)));
}

/// The cap-table index of the capability pointer `content`, which must be less than
/// `table_len` (the length of the payload's `capTable`).
pub(crate) fn read_capability(
    content: any_pointer::Reader<'_>,
    table_len: u32,
) -> capnp::Result<u32> {
    let table: CapTable = (0..table_len)
        .map(|i| Some(Box::new(Index(i)) as Box<dyn ClientHook>))
        .collect();
    let mut content: any_pointer::Reader<'_> = content;
    content.imbue(&table);
    let hook: Box<dyn ClientHook> = content.get_as_capability()?;
    u32::try_from(hook.get_ptr()).map_err(|_| capnp::Error::failed("cap index".to_owned()))
}

fn refused() -> capnp::Error {
    capnp::Error::unimplemented("capabilities on the control stream are indexes only".to_owned())
}

/// A capability that is only its cap-table index.
struct Index(u32);

impl ClientHook for Index {
    fn add_ref(&self) -> Box<dyn ClientHook> {
        Box::new(Index(self.0))
    }

    fn new_call(
        &self,
        _interface_id: u64,
        _method_id: u16,
        _size_hint: Option<capnp::MessageSize>,
    ) -> Request<any_pointer::Owned, any_pointer::Owned> {
        Request::new(Box::new(RefusedRequest(
            capnp::message::Builder::new_default(),
        )))
    }

    fn call(
        &self,
        _interface_id: u64,
        _method_id: u16,
        _params: Box<dyn ParamsHook>,
        _results: Box<dyn ResultsHook>,
    ) -> Promise<(), capnp::Error> {
        Promise::err(refused())
    }

    fn get_brand(&self) -> usize {
        0
    }

    fn get_ptr(&self) -> usize {
        self.0 as usize
    }

    fn get_resolved(&self) -> Option<Box<dyn ClientHook>> {
        None
    }

    fn when_more_resolved(&self) -> Option<Promise<Box<dyn ClientHook>, capnp::Error>> {
        None
    }

    fn when_resolved(&self) -> Promise<(), capnp::Error> {
        Promise::ok(())
    }
}

/// A request on an [`Index`]: its params can be built, sending it fails.
struct RefusedRequest(capnp::message::Builder<capnp::message::HeapAllocator>);

impl RequestHook for RefusedRequest {
    fn get(&mut self) -> any_pointer::Builder<'_> {
        self.0.init_root()
    }

    fn get_brand(&self) -> usize {
        0
    }

    fn send(self: Box<Self>) -> RemotePromise<any_pointer::Owned> {
        RemotePromise {
            promise: Promise::err(refused()),
            pipeline: any_pointer::Pipeline::new(Box::new(RefusedPipeline)),
        }
    }

    fn send_streaming(self: Box<Self>) -> Promise<(), capnp::Error> {
        Promise::err(refused())
    }

    fn tail_send(
        self: Box<Self>,
    ) -> Option<(u32, Promise<(), capnp::Error>, Box<dyn PipelineHook>)> {
        None
    }
}

/// The pipeline of a refused request: every capability on it is refused too.
struct RefusedPipeline;

impl PipelineHook for RefusedPipeline {
    fn add_ref(&self) -> Box<dyn PipelineHook> {
        Box::new(RefusedPipeline)
    }

    fn get_pipelined_cap(&self, _ops: &[PipelineOp]) -> Box<dyn ClientHook> {
        Box::new(Index(u32::MAX))
    }
}
