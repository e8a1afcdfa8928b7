//! Decoding: the generated `rpc.capnp` readers to [`Message`] values.
//!
//! Each field is read once into an owned value; payload content is copied out as an
//! [`Object`] or kept as a capability index. A failed read names the field (see
//! `codec::field_error`).

use capnp::struct_list;

use super::{
    Call, CapDescriptor, Content, Exception, ExceptionType, Finish, Message, Payload, Return,
    ReturnBody, SendResultsTo, Target,
};
use crate::codec::{self, Object, field, field_error, read_capability, text};
use crate::generated::rpc_capnp::{
    call, cap_descriptor, exception, message, message_target, payload, promised_answer, return_,
};
use crate::{Decoded, Error};

impl Message {
    /// Decodes the first framed message in `buf`; `consumed` is its length.
    pub(crate) fn decode(buf: &[u8]) -> Result<Decoded<Self>, Error> {
        let (frame, consumed) = match codec::read(buf)? {
            Decoded::Complete { value, consumed } => (value, consumed),
            Decoded::Incomplete { needed } => return Ok(Decoded::Incomplete { needed }),
        };
        let value = Self::read(codec::root(&frame)?)?;
        Ok(Decoded::Complete { value, consumed })
    }

    /// Decodes a message kept as a copy (an echo in `Unimplemented`).
    pub(crate) fn from_object(message: &Object) -> Result<Self, Error> {
        Self::read(codec::root(&message.reader())?)
    }

    /// Reads a `Message` struct.
    pub(crate) fn read(root: message::Reader<'_>) -> Result<Self, Error> {
        use message::Which;
        let which = match root.which() {
            Ok(which) => which,
            Err(capnp::NotInSchema(which)) => return unsupported(root, which),
        };
        Ok(match which {
            Which::Unimplemented(echo) => {
                let echo = field("rpc Message.unimplemented", echo)?;
                let size = field("rpc Message.unimplemented", echo.total_size())?;
                Self::Unimplemented(Object::copy::<message::Owned>(echo, size.word_count)?)
            }
            Which::Abort(e) => Self::Abort(read_exception(field("rpc Message.abort", e)?)?),
            Which::Call(c) => Self::Call(read_call(field("rpc Message.call", c)?)?),
            Which::Return(r) => Self::Return(read_return(field("rpc Message.return", r)?)?),
            Which::Finish(f) => {
                let f = field("rpc Message.finish", f)?;
                Self::Finish(Finish {
                    question_id: f.get_question_id(),
                    release_result_caps: f.get_release_result_caps(),
                })
            }
            Which::Bootstrap(b) => Self::Bootstrap {
                question_id: field("rpc Message.bootstrap", b)?.get_question_id(),
            },
            Which::Release(r) => {
                let r = field("rpc Message.release", r)?;
                Self::Release {
                    id: r.get_id(),
                    reference_count: r.get_reference_count(),
                }
            }
            Which::Resolve(_) => return unsupported(root, 5),
            Which::ObsoleteSave(_) => return unsupported(root, 7),
        })
    }
}

fn unsupported(root: message::Reader<'_>, which: u16) -> Result<Message, Error> {
    let size = field("rpc Message", root.total_size())?;
    Ok(Message::Unsupported {
        which,
        message: Object::copy::<message::Owned>(root, size.word_count)?,
    })
}

fn read_exception(e: exception::Reader<'_>) -> Result<Exception, Error> {
    use exception::Type;
    let kind = match e.get_type() {
        Ok(Type::Failed) => ExceptionType::Failed,
        Ok(Type::Overloaded) => ExceptionType::Overloaded,
        Ok(Type::Disconnected) => ExceptionType::Disconnected,
        Ok(Type::Unimplemented) => ExceptionType::Unimplemented,
        Err(capnp::NotInSchema(other)) => ExceptionType::Other(other),
    };
    Ok(Exception {
        reason: text("rpc Exception.reason", e.get_reason())?,
        kind,
    })
}

fn read_call(c: call::Reader<'_>) -> Result<Call, Error> {
    use call::send_results_to::Which;
    let send_results_to = match c.get_send_results_to().which() {
        Ok(Which::Caller(())) => SendResultsTo::Caller,
        Ok(Which::Yourself(())) => SendResultsTo::Yourself,
        Ok(Which::ThirdParty(_)) => SendResultsTo::ThirdParty,
        Err(e) => return Err(field_error("rpc Call.sendResultsTo", e.into())),
    };
    Ok(Call {
        question_id: c.get_question_id(),
        target: read_target(field("rpc Call.target", c.get_target())?)?,
        interface_id: c.get_interface_id(),
        method_id: c.get_method_id(),
        params: read_payload("rpc Call.params", field("rpc Call.params", c.get_params())?)?,
        send_results_to,
    })
}

fn read_target(t: message_target::Reader<'_>) -> Result<Target, Error> {
    use message_target::Which;
    match t.which() {
        Ok(Which::ImportedCap(id)) => Ok(Target::ImportedCap(id)),
        Ok(Which::PromisedAnswer(answer)) => {
            let answer = field("rpc MessageTarget.promisedAnswer", answer)?;
            Ok(Target::PromisedAnswer {
                question_id: answer.get_question_id(),
                transform: read_transform(field(
                    "rpc PromisedAnswer.transform",
                    answer.get_transform(),
                )?)?,
            })
        }
        Err(e) => Err(field_error("rpc MessageTarget", e.into())),
    }
}

fn read_transform(
    ops: struct_list::Reader<'_, promised_answer::op::Owned>,
) -> Result<Vec<u16>, Error> {
    use promised_answer::op::Which;
    let mut transform = Vec::new();
    for op in ops {
        match op.which() {
            Ok(Which::Noop(())) => {}
            Ok(Which::GetPointerField(index)) => transform.push(index),
            Err(e) => return Err(field_error("rpc PromisedAnswer.Op", e.into())),
        }
    }
    Ok(transform)
}

fn read_payload(what: &'static str, p: payload::Reader<'_>) -> Result<Payload, Error> {
    let descriptors = field("rpc Payload.capTable", p.get_cap_table())?;
    let cap_table = descriptors
        .iter()
        .map(read_cap_descriptor)
        .collect::<Result<Vec<_>, _>>()?;
    let content = p.get_content();
    let content = if content.is_null() {
        Content::Null
    } else {
        match read_capability(content, descriptors.len()) {
            Ok(index) => Content::Capability(index),
            Err(e)
                if e.kind
                    == capnp::ErrorKind::MessageContainsNonCapabilityPointerWhereCapabilityPointerWasExpected =>
            {
                Content::Object(Object::of_pointer(content)?)
            }
            Err(e) => return Err(field_error(what, e)),
        }
    };
    Ok(Payload { content, cap_table })
}

fn read_cap_descriptor(d: cap_descriptor::Reader<'_>) -> Result<CapDescriptor, Error> {
    use cap_descriptor::Which;
    match d.which() {
        Ok(Which::None(())) => Ok(CapDescriptor::None),
        Ok(Which::SenderHosted(id)) => Ok(CapDescriptor::SenderHosted(id)),
        Ok(Which::SenderPromise(id)) => Ok(CapDescriptor::SenderPromise(id)),
        Ok(Which::ReceiverHosted(id)) => Ok(CapDescriptor::ReceiverHosted(id)),
        Ok(Which::ReceiverAnswer(_)) => Ok(CapDescriptor::ReceiverAnswer),
        Ok(Which::ThirdPartyHosted(_)) => Ok(CapDescriptor::ThirdPartyHosted),
        Err(e) => Err(field_error("rpc CapDescriptor", e.into())),
    }
}

fn read_return(r: return_::Reader<'_>) -> Result<Return, Error> {
    use return_::Which;
    let body = match r.which() {
        Ok(Which::Results(p)) => ReturnBody::Results(read_payload(
            "rpc Return.results",
            field("rpc Return.results", p)?,
        )?),
        Ok(Which::Exception(e)) => {
            ReturnBody::Exception(read_exception(field("rpc Return.exception", e)?)?)
        }
        Ok(Which::Canceled(())) => ReturnBody::Canceled,
        Ok(Which::ResultsSentElsewhere(())) => ReturnBody::ResultsSentElsewhere,
        Ok(Which::TakeFromOtherQuestion(id)) => ReturnBody::TakeFromOtherQuestion(id),
        Ok(Which::AcceptFromThirdParty(_)) => ReturnBody::AcceptFromThirdParty,
        Err(e) => return Err(field_error("rpc Return", e.into())),
    };
    Ok(Return {
        answer_id: r.get_answer_id(),
        release_param_caps: r.get_release_param_caps(),
        body,
        no_finish_needed: r.get_no_finish_needed(),
    })
}
