//! Encoding: [`Message`] values to the generated `rpc.capnp` builders.
//!
//! Fields are written in pointer order and depth first, with empty text and empty
//! lists as null, so a message has the standard layout the golden tests derive by
//! hand. Copying an `Object` payload into a message returns a `Result` from the
//! `capnp` crate, so [`Message::encode`] does too; `Abort` and `Finish` carry no
//! copied object and encode infallibly ([`Exception::encode_abort`],
//! [`Finish::encode`]), which is what a state machine sends when it can no longer
//! report an error.

use capnp::any_pointer;

use super::{
    Call, CapDescriptor, Content, Exception, ExceptionType, Finish, Message, Payload, Return,
    ReturnBody, SendResultsTo, Target,
};
use crate::Error;
use crate::codec::{self, list_len, set_enum, write_capability};
use crate::generated::rpc_capnp::{call, exception, message, message_target, payload, return_};

impl Message {
    /// Encodes the message as one framed Cap'n Proto message.
    pub(crate) fn encode(&self) -> Result<Vec<u8>, Error> {
        let mut builder = codec::builder(64);
        if let Self::Unsupported { message, .. } = self {
            // The message as it came: its copy is already a whole `Message` struct.
            let message = message.reader();
            let message: any_pointer::Reader<'_> = codec::root(&message)?;
            builder.set_root(message).map_err(copy_failed)?;
            return Ok(codec::write(&builder));
        }
        let root = builder.init_root::<message::Builder<'_>>();
        match self {
            Self::Unimplemented(echo) => {
                let echo = echo.reader();
                let echo: message::Reader<'_> = codec::root(&echo)?;
                let mut root = root;
                root.set_unimplemented(echo).map_err(copy_failed)?;
            }
            Self::Abort(e) => e.write(root.init_abort()),
            Self::Call(c) => c.write(root.init_call())?,
            Self::Return(r) => r.write(root.init_return())?,
            Self::Finish(f) => f.write(root),
            Self::Bootstrap { question_id } => root.init_bootstrap().set_question_id(*question_id),
            Self::Release {
                id,
                reference_count,
            } => {
                let mut release = root.init_release();
                release.set_id(*id);
                release.set_reference_count(*reference_count);
            }
            Self::Unsupported { .. } => {}
        }
        Ok(codec::write(&builder))
    }
}

fn copy_failed(error: capnp::Error) -> Error {
    Error::Capnp {
        context: Some("cannot copy a payload into a message"),
        source: error,
    }
}

impl Exception {
    /// An `Abort` carrying this exception, framed.
    pub(crate) fn encode_abort(&self) -> Vec<u8> {
        let mut builder = codec::builder(16);
        self.write(builder.init_root::<message::Builder<'_>>().init_abort());
        codec::write(&builder)
    }

    fn write(&self, mut b: exception::Builder<'_>) {
        if !self.reason.is_empty() {
            b.set_reason(self.reason.as_str());
        }
        let kind = match self.kind {
            ExceptionType::Failed => exception::Type::Failed,
            ExceptionType::Overloaded => exception::Type::Overloaded,
            ExceptionType::Disconnected => exception::Type::Disconnected,
            ExceptionType::Unimplemented => exception::Type::Unimplemented,
            ExceptionType::Other(value) => {
                // `type` is an enum field of Exception in the compiled-in schema, the
                // only thing setting it through the schema can fail on.
                set_enum::<exception::Type>(b, "type", value)
                    .expect("Exception.type is an enum field");
                return;
            }
        };
        b.set_type(kind);
    }
}

impl Finish {
    /// This `Finish`, framed.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut builder = codec::builder(8);
        self.write(builder.init_root::<message::Builder<'_>>());
        codec::write(&builder)
    }

    fn write(&self, root: message::Builder<'_>) {
        let mut finish = root.init_finish();
        finish.set_question_id(self.question_id);
        finish.set_release_result_caps(self.release_result_caps);
    }
}

impl Call {
    fn write(&self, mut b: call::Builder<'_>) -> Result<(), Error> {
        b.set_question_id(self.question_id);
        b.set_interface_id(self.interface_id);
        b.set_method_id(self.method_id);
        self.target.write(b.reborrow().init_target());
        self.params.write(b.reborrow().init_params())?;
        let mut to = b.init_send_results_to();
        match self.send_results_to {
            SendResultsTo::Caller => to.set_caller(()),
            SendResultsTo::Yourself => to.set_yourself(()),
            SendResultsTo::ThirdParty => {
                to.init_third_party();
            }
        }
        Ok(())
    }
}

impl Target {
    fn write(&self, mut b: message_target::Builder<'_>) {
        match self {
            Self::ImportedCap(id) => b.set_imported_cap(*id),
            Self::PromisedAnswer {
                question_id,
                transform,
            } => {
                let mut answer = b.init_promised_answer();
                answer.set_question_id(*question_id);
                // An empty transform is left null, which reads as empty.
                if !transform.is_empty() {
                    let mut ops = answer.init_transform(list_len(transform.len()));
                    for (i, index) in (0..).zip(transform) {
                        ops.reborrow().get(i).set_get_pointer_field(*index);
                    }
                }
            }
        }
    }
}

impl Payload {
    fn write(&self, mut b: payload::Builder<'_>) -> Result<(), Error> {
        match &self.content {
            Content::Null => {}
            Content::Capability(index) => {
                if *index as usize >= self.cap_table.len() {
                    return Err(Error::CapnpLimit(format!(
                        "capability {index} is outside a cap table of {}",
                        self.cap_table.len()
                    )));
                }
                write_capability(b.reborrow().init_content(), *index);
            }
            Content::Object(object) => {
                let object = object.reader();
                let object: any_pointer::Reader<'_> = codec::root(&object)?;
                b.reborrow()
                    .init_content()
                    .set_as(object)
                    .map_err(copy_failed)?;
            }
        }
        // An empty cap table is left null, which reads as empty.
        if !self.cap_table.is_empty() {
            let mut table = b.init_cap_table(list_len(self.cap_table.len()));
            for (i, descriptor) in (0..).zip(&self.cap_table) {
                let mut d = table.reborrow().get(i);
                match *descriptor {
                    CapDescriptor::None => d.set_none(()),
                    CapDescriptor::SenderHosted(id) => d.set_sender_hosted(id),
                    CapDescriptor::SenderPromise(id) => d.set_sender_promise(id),
                    CapDescriptor::ReceiverHosted(id) => d.set_receiver_hosted(id),
                    CapDescriptor::ReceiverAnswer => {
                        d.init_receiver_answer();
                    }
                    CapDescriptor::ThirdPartyHosted => {
                        d.init_third_party_hosted();
                    }
                }
            }
        }
        Ok(())
    }
}

impl Return {
    fn write(&self, mut b: return_::Builder<'_>) -> Result<(), Error> {
        b.set_answer_id(self.answer_id);
        b.set_release_param_caps(self.release_param_caps);
        b.set_no_finish_needed(self.no_finish_needed);
        match &self.body {
            ReturnBody::Results(p) => p.write(b.init_results())?,
            ReturnBody::Exception(e) => e.write(b.init_exception()),
            ReturnBody::Canceled => b.set_canceled(()),
            ReturnBody::ResultsSentElsewhere => b.set_results_sent_elsewhere(()),
            ReturnBody::TakeFromOtherQuestion(id) => b.set_take_from_other_question(*id),
            ReturnBody::AcceptFromThirdParty => {
                b.init_accept_from_third_party();
            }
        }
        Ok(())
    }
}
