//! The Cap'n Proto RPC message structures (`schema/rpc.capnp`, two-party, level 1)
//! that the control stream uses, as owned Rust values.
//!
//! Only what the registration exchange needs is typed: `Bootstrap`, `Call`,
//! `Return`, `Finish`, `Release`, `Abort` and `Unimplemented`. Any other message kind
//! decodes as [`Message::Unsupported`], keeping a copy of the message so the state
//! machines can echo it back in `Unimplemented`, as the RPC protocol asks. A union
//! member or enumerant the schema does not know is a decode error, as it is for
//! other RPC implementations, except in an exception's type (kept as a number).
//!
//! What a payload carries is kept as [`Content`]: a capability's cap-table index, or
//! an owned copy of the params or results struct, read with the type its call
//! implies ([`Payload::read_struct`]). `read` maps the generated readers to
//! these values, `write` the values to the generated builders.

mod read;
mod write;

use capnp::traits::Owned;

use crate::Error;
use crate::codec::{Object, field_error};

/// One RPC message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Message {
    /// The peer did not understand a message we sent; it is echoed back.
    Unimplemented(Object),
    /// The connection is being torn down.
    Abort(Exception),
    /// A method call.
    Call(Call),
    /// The answer to a `Call` or `Bootstrap`.
    Return(Return),
    /// The caller is done with a question.
    Finish(Finish),
    /// Bootstrap request.
    Bootstrap {
        /// The question this bootstrap opens.
        question_id: u32,
    },
    /// Drop references to an exported capability.
    Release {
        /// The export ID.
        id: u32,
        /// How many references to drop.
        reference_count: u32,
    },
    /// Any other kind: its union discriminant, and the whole message to echo.
    Unsupported {
        /// The `Message` union discriminant.
        which: u16,
        /// The message as received.
        message: Object,
    },
}

/// `Exception`: why a call or the connection failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exception {
    pub(crate) reason: String,
    pub(crate) kind: ExceptionType,
}

/// `Exception.Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExceptionType {
    Failed,
    Overloaded,
    Disconnected,
    Unimplemented,
    /// A type this schema does not name.
    Other(u16),
}

/// `Call`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Call {
    pub(crate) question_id: u32,
    pub(crate) target: Target,
    pub(crate) interface_id: u64,
    pub(crate) method_id: u16,
    pub(crate) params: Payload,
    pub(crate) send_results_to: SendResultsTo,
}

/// `Call.sendResultsTo`: where the results of a call go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SendResultsTo {
    /// Back to the caller in a `Return` (the only kind the control stream serves).
    Caller,
    /// Kept by the callee for a later `takeFromOtherQuestion`.
    Yourself,
    /// To a third party (level 3).
    ThirdParty,
}

/// `MessageTarget`: what a call is aimed at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A capability the callee exported.
    ImportedCap(u32),
    /// The answer to a question still outstanding (promise pipelining).
    PromisedAnswer {
        question_id: u32,
        /// `transform` as the pointer indexes of its `getPointerField` ops; `noop`
        /// ops are dropped.
        transform: Vec<u16>,
    },
}

/// `Payload`: call params or return results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Payload {
    pub(crate) content: Content,
    pub(crate) cap_table: Vec<CapDescriptor>,
}

/// What a payload's `content` pointer holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Content {
    /// Null: reads as a struct of all defaults.
    Null,
    /// A capability: its index into the payload's `capTable`.
    Capability(u32),
    /// A struct (or, from a confused peer, a list), copied out of the message.
    Object(Object),
}

/// `CapDescriptor`: one entry of a payload's cap table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CapDescriptor {
    None,
    SenderHosted(u32),
    SenderPromise(u32),
    ReceiverHosted(u32),
    /// A capability on an answer of ours (its promised answer is not kept).
    ReceiverAnswer,
    /// A capability held by a third party (level 3; not kept).
    ThirdPartyHosted,
}

/// `Return`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Return {
    pub(crate) answer_id: u32,
    pub(crate) release_param_caps: bool,
    pub(crate) body: ReturnBody,
    pub(crate) no_finish_needed: bool,
}

/// `Return`'s union.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReturnBody {
    Results(Payload),
    Exception(Exception),
    Canceled,
    ResultsSentElsewhere,
    TakeFromOtherQuestion(u32),
    /// Level 3; what to accept is not kept.
    AcceptFromThirdParty,
}

/// `Finish`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Finish {
    pub(crate) question_id: u32,
    pub(crate) release_result_caps: bool,
}

impl Exception {
    pub(crate) fn failed(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            kind: ExceptionType::Failed,
        }
    }

    pub(crate) fn unimplemented(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            kind: ExceptionType::Unimplemented,
        }
    }
}

impl Payload {
    /// A payload whose content is a struct and which carries no capabilities.
    pub(crate) fn of_struct(content: Object) -> Self {
        Self {
            content: Content::Object(content),
            cap_table: Vec::new(),
        }
    }

    /// A payload whose content is one capability, described by `descriptor`.
    pub(crate) fn of_capability(descriptor: CapDescriptor) -> Self {
        Self {
            content: Content::Capability(0),
            cap_table: vec![descriptor],
        }
    }

    /// Reads the content as a `T` struct (null reads as all defaults) with `read`;
    /// `what` names the content in errors.
    pub(crate) fn read_struct<T: Owned, R>(
        &self,
        what: &'static str,
        read: impl FnOnce(T::Reader<'_>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let null;
        let object = match &self.content {
            Content::Object(object) => object,
            Content::Null => {
                null = Object::null();
                &null
            }
            Content::Capability(_) => {
                return Err(Error::Schema {
                    structure: what,
                    problem: "payload content is a capability, not a struct".to_owned(),
                });
            }
        };
        let reader = object.reader();
        let root = reader
            .get_root::<T::Reader<'_>>()
            .map_err(|e| field_error(what, e))?;
        read(root)
    }
}

#[cfg(test)]
mod tests;
