//! The Cap'n Proto RPC message structures (`rpc.capnp`, two-party, level 1) that
//! the control stream uses.
//!
//! Only what the registration exchange needs is typed: `Bootstrap`, `Call`,
//! `Return`, `Finish`, `Release`, `Abort` and `Unimplemented`. Any other message kind
//! decodes as [`Message::Unsupported`] so the state machines can answer it with
//! `Unimplemented`, as the RPC protocol asks. Layouts are those of the standard
//! `rpc.capnp` (capnpc's allocation): `Message` is 1 data word / 1 pointer with its
//! union discriminant at byte 0 and every member in pointer 0.

use super::capnp::{Pointer, StructValue, encode_message};
use crate::Error;

/// `Message` union discriminants.
mod which {
    pub(super) const UNIMPLEMENTED: u16 = 0;
    pub(super) const ABORT: u16 = 1;
    pub(super) const CALL: u16 = 2;
    pub(super) const RETURN: u16 = 3;
    pub(super) const FINISH: u16 = 4;
    pub(super) const RELEASE: u16 = 6;
    pub(super) const BOOTSTRAP: u16 = 8;
}

/// One RPC message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Message {
    /// The peer did not understand a message we sent; it is echoed back.
    Unimplemented(StructValue),
    /// The connection is being torn down.
    Abort(Exception),
    /// A method call.
    Call(Call),
    /// The answer to a `Call` or `Bootstrap`.
    Return(Return),
    /// The caller is done with a question.
    Finish(Finish),
    /// Bootstrap request (1 / 1): `questionId :UInt32` at byte 0.
    Bootstrap {
        /// The question this bootstrap opens.
        question_id: u32,
    },
    /// Drop references to an exported capability (1 / 0).
    Release {
        /// `id :UInt32` at byte 0.
        id: u32,
        /// `referenceCount :UInt32` at byte 4.
        reference_count: u32,
    },
    /// Any other kind, by discriminant.
    Unsupported(u16),
}

/// `Exception` (1 / 2): `reason` ptr 0, `type` UInt16 at byte 4, `trace` ptr 1.
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
    Other(u16),
}

/// `Call` (3 / 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Call {
    /// `questionId` UInt32 at byte 0.
    pub(crate) question_id: u32,
    /// `target` ptr 0.
    pub(crate) target: Target,
    /// `interfaceId` UInt64 at byte 8.
    pub(crate) interface_id: u64,
    /// `methodId` UInt16 at byte 4.
    pub(crate) method_id: u16,
    /// `params` ptr 1.
    pub(crate) params: Payload,
    /// `sendResultsTo` discriminant, UInt16 at byte 6 (0 = caller).
    pub(crate) send_results_to: u16,
}

/// `MessageTarget` (1 / 1): discriminant UInt16 at byte 4.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// 0: `importedCap` UInt32 at byte 0.
    ImportedCap(u32),
    /// 1: `promisedAnswer` ptr 0.
    PromisedAnswer {
        /// `PromisedAnswer.questionId` UInt32 at byte 0.
        question_id: u32,
        /// `transform :List(Op)` as the pointer indexes of `getPointerField` ops;
        /// `noop` ops are dropped.
        transform: Vec<u16>,
    },
    /// Any other discriminant.
    Other(u16),
}

/// `Payload` (0 / 2): `content` ptr 0, `capTable` ptr 1.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Payload {
    pub(crate) content: Pointer,
    pub(crate) cap_table: Vec<CapDescriptor>,
}

/// `CapDescriptor` (1 / 1): discriminant UInt16 at byte 0, IDs UInt32 at byte 4,
/// `attachedFd` UInt8 at byte 2 (default 0xff).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CapDescriptor {
    None,
    SenderHosted(u32),
    SenderPromise(u32),
    ReceiverHosted(u32),
    Other(u16),
}

/// `Return` (2 / 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Return {
    /// `answerId` UInt32 at byte 0.
    pub(crate) answer_id: u32,
    /// `releaseParamCaps` bit 32, default true.
    pub(crate) release_param_caps: bool,
    /// The union, discriminant UInt16 at byte 6.
    pub(crate) body: ReturnBody,
    /// `noFinishNeeded` bit 33.
    pub(crate) no_finish_needed: bool,
}

/// `Return`'s union.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReturnBody {
    /// 0: `results` ptr 0.
    Results(Payload),
    /// 1: `exception` ptr 0.
    Exception(Exception),
    /// 2: `canceled`.
    Canceled,
    /// Any other discriminant.
    Other(u16),
}

/// `Finish` (1 / 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Finish {
    /// `questionId` UInt32 at byte 0.
    pub(crate) question_id: u32,
    /// `releaseResultCaps` bit 32, default true.
    pub(crate) release_result_caps: bool,
}

impl Message {
    /// Encodes the message as one framed Cap'n Proto message.
    pub(crate) fn encode(&self) -> Vec<u8> {
        encode_message(&self.to_struct())
    }

    pub(crate) fn to_struct(&self) -> StructValue {
        let mut root = StructValue::new(1, 1);
        let (discriminant, body) = match self {
            Self::Unimplemented(echo) => (which::UNIMPLEMENTED, echo.clone()),
            Self::Abort(e) => (which::ABORT, e.to_struct()),
            Self::Call(c) => (which::CALL, c.to_struct()),
            Self::Return(r) => (which::RETURN, r.to_struct()),
            Self::Finish(f) => {
                let mut s = StructValue::new(1, 0);
                s.set_u32(0, f.question_id);
                s.set_bool(32, !f.release_result_caps);
                (which::FINISH, s)
            }
            Self::Bootstrap { question_id } => {
                let mut s = StructValue::new(1, 1);
                s.set_u32(0, *question_id);
                (which::BOOTSTRAP, s)
            }
            Self::Release {
                id,
                reference_count,
            } => {
                let mut s = StructValue::new(1, 0);
                s.set_u32(0, *id);
                s.set_u32(4, *reference_count);
                (which::RELEASE, s)
            }
            Self::Unsupported(d) => (*d, StructValue::default()),
        };
        root.set_u16(0, discriminant);
        root.set_struct(0, body);
        root
    }

    pub(crate) fn from_struct(root: &StructValue) -> Result<Self, Error> {
        let discriminant = root.u16_at(0);
        let body = || root.struct_at(0, "rpc Message");
        Ok(match discriminant {
            which::UNIMPLEMENTED => Self::Unimplemented(body()?.clone()),
            which::ABORT => Self::Abort(Exception::from_struct(body()?)?),
            which::CALL => Self::Call(Call::from_struct(body()?)?),
            which::RETURN => Self::Return(Return::from_struct(body()?)?),
            which::FINISH => {
                let s = body()?;
                Self::Finish(Finish {
                    question_id: s.u32_at(0),
                    release_result_caps: !s.bool_at(32),
                })
            }
            which::BOOTSTRAP => Self::Bootstrap {
                question_id: body()?.u32_at(0),
            },
            which::RELEASE => {
                let s = body()?;
                Self::Release {
                    id: s.u32_at(0),
                    reference_count: s.u32_at(4),
                }
            }
            other => Self::Unsupported(other),
        })
    }
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

    fn to_struct(&self) -> StructValue {
        let mut s = StructValue::new(1, 2);
        s.set_text(0, &self.reason);
        let kind = match self.kind {
            ExceptionType::Failed => 0,
            ExceptionType::Overloaded => 1,
            ExceptionType::Disconnected => 2,
            ExceptionType::Unimplemented => 3,
            ExceptionType::Other(v) => v,
        };
        s.set_u16(4, kind);
        s
    }

    fn from_struct(s: &StructValue) -> Result<Self, Error> {
        let kind = match s.u16_at(4) {
            0 => ExceptionType::Failed,
            1 => ExceptionType::Overloaded,
            2 => ExceptionType::Disconnected,
            3 => ExceptionType::Unimplemented,
            v => ExceptionType::Other(v),
        };
        Ok(Self {
            reason: s.text_at(0, "rpc Exception.reason")?,
            kind,
        })
    }
}

impl Call {
    fn to_struct(&self) -> StructValue {
        let mut s = StructValue::new(3, 3);
        s.set_u32(0, self.question_id);
        s.set_struct(0, self.target.to_struct());
        s.set_u64(8, self.interface_id);
        s.set_u16(4, self.method_id);
        s.set_struct(1, self.params.to_struct());
        s.set_u16(6, self.send_results_to);
        s
    }

    fn from_struct(s: &StructValue) -> Result<Self, Error> {
        Ok(Self {
            question_id: s.u32_at(0),
            target: Target::from_struct(s.struct_at(0, "rpc Call.target")?)?,
            interface_id: s.u64_at(8),
            method_id: s.u16_at(4),
            params: Payload::from_struct(s.struct_at(1, "rpc Call.params")?)?,
            send_results_to: s.u16_at(6),
        })
    }
}

impl Target {
    fn to_struct(&self) -> StructValue {
        let mut s = StructValue::new(1, 1);
        match self {
            Self::ImportedCap(id) => {
                s.set_u32(0, *id);
                s.set_u16(4, 0);
            }
            Self::PromisedAnswer {
                question_id,
                transform,
            } => {
                s.set_u16(4, 1);
                let mut answer = StructValue::new(1, 1);
                answer.set_u32(0, *question_id);
                let ops = transform
                    .iter()
                    .map(|field| {
                        let mut op = StructValue::new(1, 0);
                        op.set_u16(0, 1);
                        op.set_u16(2, *field);
                        op
                    })
                    .collect();
                // An empty transform is written as null, which reads as empty.
                if !transform.is_empty() {
                    answer.set_struct_list(0, ops);
                }
                s.set_struct(0, answer);
            }
            Self::Other(d) => s.set_u16(4, *d),
        }
        s
    }

    fn from_struct(s: &StructValue) -> Result<Self, Error> {
        Ok(match s.u16_at(4) {
            0 => Self::ImportedCap(s.u32_at(0)),
            1 => {
                let answer = s.struct_at(0, "rpc MessageTarget.promisedAnswer")?;
                let mut transform = Vec::new();
                for op in answer.struct_list_at(0, "rpc PromisedAnswer.transform")? {
                    match op.u16_at(0) {
                        0 => {}
                        1 => transform.push(op.u16_at(2)),
                        other => {
                            return Err(Error::Schema {
                                structure: "rpc PromisedAnswer.Op",
                                problem: format!("unknown union discriminant {other}"),
                            });
                        }
                    }
                }
                Self::PromisedAnswer {
                    question_id: answer.u32_at(0),
                    transform,
                }
            }
            other => Self::Other(other),
        })
    }
}

impl Payload {
    fn to_struct(&self) -> StructValue {
        let mut s = StructValue::new(0, 2);
        s.set_ptr(0, self.content.clone());
        if !self.cap_table.is_empty() {
            s.set_struct_list(1, self.cap_table.iter().map(|c| c.to_struct()).collect());
        }
        s
    }

    fn from_struct(s: &StructValue) -> Result<Self, Error> {
        let cap_table = s
            .struct_list_at(1, "rpc Payload.capTable")?
            .iter()
            .map(CapDescriptor::from_struct)
            .collect();
        Ok(Self {
            content: s.ptr(0).clone(),
            cap_table,
        })
    }

    /// A payload whose content is a plain struct and which carries no capabilities.
    pub(crate) fn of_struct(content: StructValue) -> Self {
        Self {
            content: Pointer::Struct(content),
            cap_table: Vec::new(),
        }
    }

    /// The content as a struct; null reads as the empty struct.
    pub(crate) fn content_struct(&self, what: &'static str) -> Result<&StructValue, Error> {
        static EMPTY: StructValue = StructValue {
            data: Vec::new(),
            ptrs: Vec::new(),
        };
        match &self.content {
            Pointer::Null => Ok(&EMPTY),
            Pointer::Struct(s) => Ok(s),
            _ => Err(Error::Schema {
                structure: what,
                problem: "payload content is not a struct".to_owned(),
            }),
        }
    }
}

impl CapDescriptor {
    fn to_struct(self) -> StructValue {
        let mut s = StructValue::new(1, 1);
        let (discriminant, id) = match self {
            Self::None => (0, 0),
            Self::SenderHosted(id) => (1, id),
            Self::SenderPromise(id) => (2, id),
            Self::ReceiverHosted(id) => (3, id),
            Self::Other(d) => (d, 0),
        };
        s.set_u16(0, discriminant);
        s.set_u32(4, id);
        // attachedFd defaults to 0xff and is stored XOR the default: 0 means "none".
        s
    }

    fn from_struct(s: &StructValue) -> Self {
        match s.u16_at(0) {
            0 => Self::None,
            1 => Self::SenderHosted(s.u32_at(4)),
            2 => Self::SenderPromise(s.u32_at(4)),
            3 => Self::ReceiverHosted(s.u32_at(4)),
            other => Self::Other(other),
        }
    }
}

impl Return {
    fn to_struct(&self) -> StructValue {
        let mut s = StructValue::new(2, 1);
        s.set_u32(0, self.answer_id);
        s.set_bool(32, !self.release_param_caps);
        s.set_bool(33, self.no_finish_needed);
        let discriminant = match &self.body {
            ReturnBody::Results(p) => {
                s.set_struct(0, p.to_struct());
                0
            }
            ReturnBody::Exception(e) => {
                s.set_struct(0, e.to_struct());
                1
            }
            ReturnBody::Canceled => 2,
            ReturnBody::Other(d) => *d,
        };
        s.set_u16(6, discriminant);
        s
    }

    fn from_struct(s: &StructValue) -> Result<Self, Error> {
        let body = match s.u16_at(6) {
            0 => ReturnBody::Results(Payload::from_struct(s.struct_at(0, "rpc Return.results")?)?),
            1 => ReturnBody::Exception(Exception::from_struct(
                s.struct_at(0, "rpc Return.exception")?,
            )?),
            2 => ReturnBody::Canceled,
            other => ReturnBody::Other(other),
        };
        Ok(Self {
            answer_id: s.u32_at(0),
            release_param_caps: !s.bool_at(32),
            body,
            no_finish_needed: s.bool_at(33),
        })
    }
}

#[cfg(test)]
mod tests;
