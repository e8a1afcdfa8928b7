//! The edge's side of the control stream, for the simulator: an RPC server whose
//! bootstrap capability is a `RegistrationServer`.
//!
//! `Bootstrap` is answered at once with export 0. Calls may target the bootstrap's
//! promised answer (pipelining, transform empty) or import 0; each registration method
//! becomes a [`ServerEvent`] carrying a [`ServerCallId`], and the owner answers with
//! `respond_*` whenever it chooses. Answers follow the RPC answer-table rules: an
//! entry lives until both our `Return` and the client's `Finish` happened.

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use super::{Inbox, drain_into};
use crate::Error;
use crate::generated::tunnelrpc_capnp::registration_server::{
    register_connection_params, update_local_configuration_params,
};
use crate::registration::{
    ConnectionResponse, RegisterConnection, empty_results, read_update_local_configuration,
    register_results,
};
use crate::rpc::{
    Call, CapDescriptor, Exception, Message, Payload, Return, ReturnBody, SendResultsTo, Target,
};
use crate::schema::{
    METHOD_REGISTER_CONNECTION, METHOD_UNREGISTER_CONNECTION, METHOD_UPDATE_LOCAL_CONFIGURATION,
    REGISTRATION_SERVER_ID,
};

/// The export ID of the bootstrap `RegistrationServer`.
const BOOTSTRAP_EXPORT: u32 = 0;

/// Names one incoming call until it is answered (its RPC question ID).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerCallId(u32);

impl ServerCallId {
    /// The RPC question ID of the call.
    pub fn question_id(self) -> u32 {
        self.0
    }
}

/// A call the edge must answer, or the end of the RPC connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerEvent {
    /// `registerConnection`; answer with [`ControlServer::respond_register`].
    RegisterConnection {
        /// The call to answer.
        call: ServerCallId,
        /// Its arguments.
        request: RegisterConnection,
    },
    /// `unregisterConnection`; answer with [`ControlServer::respond_empty`] (a
    /// simulator may delay this until its in-flight streams are done).
    UnregisterConnection {
        /// The call to answer.
        call: ServerCallId,
    },
    /// `updateLocalConfiguration`; answer with [`ControlServer::respond_empty`].
    UpdateLocalConfiguration {
        /// The call to answer.
        call: ServerCallId,
        /// The JSON configuration bytes.
        config: Vec<u8>,
    },
    /// The connector aborted the RPC connection (normally `rpc: shutdown`).
    Closed {
        /// The `Abort` reason.
        reason: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Register,
    Unregister,
    UpdateLocalConfiguration,
}

#[derive(Debug)]
enum Answer {
    /// Answered with the bootstrap capability; a valid pipelining target until the
    /// client finishes it.
    Bootstrap,
    /// Waiting for the owner's reply; `finished` if the client already sent `Finish`.
    Pending { method: Method, finished: bool },
    /// Returned; waiting for the client's `Finish`.
    Returned,
}

/// Edge-side control-stream state machine.
#[derive(Debug, Default)]
pub struct ControlServer {
    answers: BTreeMap<u32, Answer>,
    /// References the client holds to the bootstrap export (informational).
    export_refs: u64,
    /// Whether export 0 was ever handed out, making import 0 a valid call target.
    bootstrapped: bool,
    inbox: Inbox,
    outbox: Vec<u8>,
    events: VecDeque<ServerEvent>,
    closed: bool,
}

impl ControlServer {
    /// A server waiting for the connector's `Bootstrap`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes read from the control stream. A protocol violation queues an
    /// `Abort`, closes the server and is returned. The server keeps no timers, so
    /// `now` is unused today.
    pub fn handle_input(&mut self, bytes: &[u8], _now: Instant) -> Result<(), Error> {
        if self.closed {
            return Ok(());
        }
        self.inbox.push(bytes);
        while !self.closed {
            let message = match self.inbox.next_message() {
                Ok(Some(message)) => message,
                Ok(None) => break,
                Err(e) => return Err(self.fail(e)),
            };
            if let Err(e) = self.handle_message(message) {
                return Err(self.fail(e));
            }
        }
        Ok(())
    }

    /// Answers a `registerConnection` call.
    pub fn respond_register(
        &mut self,
        call: ServerCallId,
        response: &ConnectionResponse,
    ) -> Result<(), Error> {
        self.check_pending(call, Some(Method::Register))?;
        let results = register_results(response);
        self.answer(call.0, ReturnBody::Results(Payload::of_struct(results)))
    }

    /// Answers `unregisterConnection` or `updateLocalConfiguration` (both return
    /// an empty struct).
    pub fn respond_empty(&mut self, call: ServerCallId) -> Result<(), Error> {
        self.check_pending(call, None)?;
        let results = empty_results();
        self.answer(call.0, ReturnBody::Results(Payload::of_struct(results)))
    }

    /// Fails any pending call with an RPC exception of type `failed`.
    pub fn respond_exception(&mut self, call: ServerCallId, reason: &str) -> Result<(), Error> {
        self.check_pending(call, None)?;
        self.answer(call.0, ReturnBody::Exception(Exception::failed(reason)))
    }

    /// Aborts the RPC connection from the edge's side.
    pub fn close(&mut self, reason: &str) {
        if !self.closed {
            self.outbox.extend(Exception::failed(reason).encode_abort());
            self.closed = true;
        }
    }

    /// Whether the RPC connection is over.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Appends the bytes to write on the control stream to `out`; returns how many.
    pub fn poll_transmit(&mut self, out: &mut Vec<u8>) -> usize {
        drain_into(&mut self.outbox, out)
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        self.events.pop_front()
    }

    /// The server keeps no timers: replies are the owner's to time.
    pub fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    /// How many references to the bootstrap capability the client holds.
    pub fn bootstrap_references(&self) -> u64 {
        self.export_refs
    }

    fn send(&mut self, message: &Message) -> Result<(), Error> {
        self.outbox.extend(message.encode()?);
        Ok(())
    }

    fn fail(&mut self, error: Error) -> Error {
        self.close(&error.to_string());
        error
    }

    fn check_pending(&self, call: ServerCallId, method: Option<Method>) -> Result<(), Error> {
        match self.answers.get(&call.0) {
            Some(Answer::Pending { method: m, .. }) if method.is_none_or(|want| want == *m) => {
                if self.closed {
                    Err(Error::ControlClosed)
                } else {
                    Ok(())
                }
            }
            _ => Err(Error::UnknownCall(call.0)),
        }
    }

    /// Sends the `Return` for `question_id` and updates its answer-table entry.
    fn answer(&mut self, question_id: u32, body: ReturnBody) -> Result<(), Error> {
        let finished = match self.answers.get(&question_id) {
            Some(Answer::Pending { finished, .. }) => *finished,
            _ => false,
        };
        if finished {
            self.answers.remove(&question_id);
        } else {
            self.answers.insert(question_id, Answer::Returned);
        }
        self.send(&Message::Return(Return {
            answer_id: question_id,
            release_param_caps: true,
            body,
            no_finish_needed: false,
        }))
    }

    fn handle_message(&mut self, message: Message) -> Result<(), Error> {
        match message {
            Message::Bootstrap { question_id } => {
                self.claim_question(question_id)?;
                self.answers.insert(question_id, Answer::Bootstrap);
                self.export_refs += 1;
                self.bootstrapped = true;
                self.send(&Message::Return(Return {
                    answer_id: question_id,
                    release_param_caps: true,
                    body: ReturnBody::Results(Payload::of_capability(CapDescriptor::SenderHosted(
                        BOOTSTRAP_EXPORT,
                    ))),
                    no_finish_needed: false,
                }))
            }
            Message::Call(call) => self.handle_call(call),
            Message::Finish(finish) => {
                match self.answers.get_mut(&finish.question_id) {
                    Some(Answer::Bootstrap) => {
                        if finish.release_result_caps {
                            self.export_refs = self.export_refs.saturating_sub(1);
                        }
                        self.answers.remove(&finish.question_id);
                    }
                    Some(Answer::Returned) => {
                        self.answers.remove(&finish.question_id);
                    }
                    Some(Answer::Pending { finished, .. }) => *finished = true,
                    None => {
                        return Err(Error::RpcProtocol(format!(
                            "finish for unknown question {}",
                            finish.question_id
                        )));
                    }
                }
                Ok(())
            }
            Message::Release {
                id,
                reference_count,
            } => {
                if id == BOOTSTRAP_EXPORT {
                    self.export_refs = self.export_refs.saturating_sub(u64::from(reference_count));
                }
                Ok(())
            }
            Message::Abort(exception) => {
                self.closed = true;
                self.events.push_back(ServerEvent::Closed {
                    reason: exception.reason,
                });
                Ok(())
            }
            // Returns would answer questions we never ask; the connector never sends
            // them to us, and an echo of our own message needs no action.
            Message::Return(ret) => Err(Error::RpcProtocol(format!(
                "return for unknown question {}",
                ret.answer_id
            ))),
            Message::Unimplemented(_) => Ok(()),
            Message::Unsupported { message, .. } => self.send(&Message::Unimplemented(message)),
        }
    }

    fn claim_question(&self, question_id: u32) -> Result<(), Error> {
        if self.answers.contains_key(&question_id) {
            return Err(Error::RpcProtocol(format!(
                "question {question_id} is already in use"
            )));
        }
        Ok(())
    }

    fn handle_call(&mut self, call: Call) -> Result<(), Error> {
        self.claim_question(call.question_id)?;
        let question_id = call.question_id;
        // Calls the server cannot take are answered at once; the entry then waits
        // for the client's Finish like any returned answer.
        let fail = |this: &mut Self, exception: Exception| {
            this.answer(question_id, ReturnBody::Exception(exception))
        };
        let target_ok = match &call.target {
            Target::PromisedAnswer {
                question_id,
                transform,
            } => {
                transform.is_empty()
                    && matches!(self.answers.get(question_id), Some(Answer::Bootstrap))
            }
            // Lenient on reference counts: peers differ in how they finish the
            // bootstrap question, and export 0 is never withdrawn.
            Target::ImportedCap(id) => *id == BOOTSTRAP_EXPORT && self.bootstrapped,
        };
        if !target_ok {
            return fail(
                self,
                Exception::failed("call target is not the bootstrap RegistrationServer"),
            );
        }
        if call.interface_id != REGISTRATION_SERVER_ID {
            return fail(
                self,
                Exception::unimplemented(format!(
                    "interface {:#018x} is not implemented",
                    call.interface_id
                )),
            );
        }
        if call.send_results_to != SendResultsTo::Caller {
            return fail(
                self,
                Exception::unimplemented("results can only be sent to the caller"),
            );
        }
        let params = &call.params;
        let id = ServerCallId(question_id);
        let (method, event) = match call.method_id {
            METHOD_REGISTER_CONNECTION => match params
                .read_struct::<register_connection_params::Owned, _>(
                    "registerConnection params",
                    RegisterConnection::read,
                ) {
                Ok(request) => (
                    Method::Register,
                    ServerEvent::RegisterConnection { call: id, request },
                ),
                Err(e) => return fail(self, Exception::failed(e.to_string())),
            },
            METHOD_UNREGISTER_CONNECTION => (
                Method::Unregister,
                ServerEvent::UnregisterConnection { call: id },
            ),
            METHOD_UPDATE_LOCAL_CONFIGURATION => match params
                .read_struct::<update_local_configuration_params::Owned, _>(
                "updateLocalConfiguration params",
                read_update_local_configuration,
            ) {
                Ok(config) => (
                    Method::UpdateLocalConfiguration,
                    ServerEvent::UpdateLocalConfiguration { call: id, config },
                ),
                Err(e) => return fail(self, Exception::failed(e.to_string())),
            },
            other => {
                return fail(
                    self,
                    Exception::unimplemented(format!(
                        "method {other} of RegistrationServer is not implemented"
                    )),
                );
            }
        };
        self.answers.insert(
            question_id,
            Answer::Pending {
                method,
                finished: false,
            },
        );
        self.events.push_back(event);
        Ok(())
    }
}
