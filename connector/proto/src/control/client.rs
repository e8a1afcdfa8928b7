//! The connector's side of the control stream: an RPC client of `RegistrationServer`.
//!
//! Start at [`ControlClient::register`]: the first call sends `Bootstrap` (question 0)
//! and pipelines `registerConnection` on `promisedAnswer{0, []}` without waiting.
//! Once the bootstrap answer names the exported capability, later calls target that
//! import instead. Every call gets a deadline of the RPC timeout; an expired call is
//! cancelled with `Finish` and reported, and a late `Return` is then dropped.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use super::{Inbox, SHUTDOWN_REASON, drain_into};
use crate::Error;
use crate::codec::Object;
use crate::generated::tunnelrpc_capnp::registration_server::register_connection_results;
use crate::registration::{
    ConnectionDetails, ConnectionResponse, RegisterConnection, RegistrationError, register_params,
    unregister_params, update_local_configuration_params,
};
use crate::rpc::{
    Call, CapDescriptor, Content, Exception, Finish, Message, Payload, Return, ReturnBody,
    SendResultsTo, Target,
};
use crate::schema::{
    METHOD_REGISTER_CONNECTION, METHOD_UNREGISTER_CONNECTION, METHOD_UPDATE_LOCAL_CONFIGURATION,
    REGISTRATION_SERVER_ID,
};

/// cloudflared's default `--rpc-timeout`.
pub const DEFAULT_RPC_TIMEOUT: Duration = Duration::from_secs(5);

/// What the control stream reports to the connector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientEvent {
    /// `registerConnection` succeeded. The UUID is checked to be 16 bytes. On
    /// connIndex 0 of a tunnel that is not remotely managed, cloudflared next calls
    /// `updateLocalConfiguration`.
    Registered(ConnectionDetails),
    /// `registerConnection` failed; see [`RegistrationError::should_retry`].
    RegistrationFailed(RegistrationError),
    /// `updateLocalConfiguration` returned.
    LocalConfigurationUpdated,
    /// `updateLocalConfiguration` failed (cloudflared only logs this).
    LocalConfigurationFailed(String),
    /// `unregisterConnection` returned: start the grace period.
    Unregistered,
    /// `unregisterConnection` failed or timed out: close at once.
    UnregisterFailed(String),
    /// The edge aborted the RPC connection.
    Closed {
        /// The `Abort` reason.
        reason: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallKind {
    Bootstrap,
    Register,
    Unregister,
    UpdateLocalConfiguration,
}

#[derive(Debug)]
struct Question {
    kind: CallKind,
    deadline: Option<Instant>,
    /// Timed out and already finished from our side; a late `Return` is dropped.
    cancelled: bool,
}

/// Where the bootstrap capability stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Bootstrap {
    NotRequested,
    /// `Bootstrap` sent as this question; calls pipeline on its answer.
    AwaitingAnswer(u32),
    /// The edge exported its `RegistrationServer` under this import ID.
    Imported(u32),
    /// The bootstrap failed; every call fails with this reason.
    Failed(String),
}

/// Connector-side control-stream state machine.
#[derive(Debug)]
pub struct ControlClient {
    rpc_timeout: Duration,
    next_question: u32,
    bootstrap: Bootstrap,
    questions: BTreeMap<u32, Question>,
    inbox: Inbox,
    outbox: Vec<u8>,
    events: VecDeque<ClientEvent>,
    closed: bool,
}

impl ControlClient {
    /// A client whose calls time out after `rpc_timeout` (see [`DEFAULT_RPC_TIMEOUT`]).
    pub fn new(rpc_timeout: Duration) -> Self {
        Self {
            rpc_timeout,
            next_question: 0,
            bootstrap: Bootstrap::NotRequested,
            questions: BTreeMap::new(),
            inbox: Inbox::default(),
            outbox: Vec::new(),
            events: VecDeque::new(),
            closed: false,
        }
    }

    /// Calls `registerConnection`. The first call also sends `Bootstrap` and
    /// pipelines on its answer. The result arrives as [`ClientEvent::Registered`] or
    /// [`ClientEvent::RegistrationFailed`].
    pub fn register(&mut self, request: &RegisterConnection, now: Instant) -> Result<(), Error> {
        self.call(
            CallKind::Register,
            METHOD_REGISTER_CONNECTION,
            register_params(request),
            now,
        )
    }

    /// Calls `updateLocalConfiguration(config)` with the JSON of the local ingress.
    pub fn update_local_configuration(&mut self, config: &[u8], now: Instant) -> Result<(), Error> {
        self.call(
            CallKind::UpdateLocalConfiguration,
            METHOD_UPDATE_LOCAL_CONFIGURATION,
            update_local_configuration_params(config),
            now,
        )
    }

    /// Calls `unregisterConnection()`, the first step of a graceful drain.
    pub fn unregister(&mut self, now: Instant) -> Result<(), Error> {
        self.call(
            CallKind::Unregister,
            METHOD_UNREGISTER_CONNECTION,
            unregister_params(),
            now,
        )
    }

    /// Closes the RPC connection the way cloudflared does: an `Abort` with reason
    /// `rpc: shutdown`. After the pending bytes are written, finish the stream.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.outbox
            .extend(Exception::failed(SHUTDOWN_REASON).encode_abort());
        self.closed = true;
        self.questions.clear();
    }

    /// Whether the RPC connection is over (closed by us, aborted by the edge, or
    /// failed on a protocol violation).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Feeds bytes read from the control stream. Whole messages are processed; a
    /// partial one waits for more bytes. A protocol violation queues an `Abort`,
    /// closes the client and is returned. `now` is taken for symmetry with the other
    /// inputs; deadlines are fixed when a call is made.
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

    /// Expires calls whose deadline is at or before `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        let expired: Vec<u32> = self
            .questions
            .iter()
            .filter(|(_, q)| !q.cancelled && q.deadline.is_some_and(|d| d <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            let Some(question) = self.questions.get_mut(&id) else {
                continue;
            };
            question.cancelled = true;
            let kind = question.kind;
            let finish = Finish {
                question_id: id,
                release_result_caps: true,
            };
            self.outbox.extend(finish.encode());
            self.report_failure(kind, None);
        }
    }

    /// Appends the bytes to write on the control stream to `out`; returns how many.
    pub fn poll_transmit(&mut self, out: &mut Vec<u8>) -> usize {
        drain_into(&mut self.outbox, out)
    }

    /// The earliest call deadline, if any call is outstanding.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.questions
            .values()
            .filter(|q| !q.cancelled)
            .filter_map(|q| q.deadline)
            .min()
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    fn send(&mut self, message: &Message) -> Result<(), Error> {
        self.outbox.extend(message.encode()?);
        Ok(())
    }

    fn fail(&mut self, error: Error) -> Error {
        if !self.closed {
            self.outbox
                .extend(Exception::failed(error.to_string()).encode_abort());
            self.closed = true;
            self.questions.clear();
        }
        error
    }

    fn allocate_question(&mut self) -> u32 {
        // Question IDs are freed when both Return and Finish happened; a plain
        // counter never reuses one, and 2^32 calls on one control stream is not a
        // realistic concern, so wrapping is acceptable.
        let id = self.next_question;
        self.next_question = self.next_question.wrapping_add(1);
        id
    }

    fn call(
        &mut self,
        kind: CallKind,
        method_id: u16,
        params: Object,
        now: Instant,
    ) -> Result<(), Error> {
        if self.closed {
            return Err(Error::ControlClosed);
        }
        let target = match &self.bootstrap {
            Bootstrap::NotRequested => {
                let question_id = self.allocate_question();
                self.questions.insert(
                    question_id,
                    Question {
                        kind: CallKind::Bootstrap,
                        deadline: None,
                        cancelled: false,
                    },
                );
                self.send(&Message::Bootstrap { question_id })?;
                self.bootstrap = Bootstrap::AwaitingAnswer(question_id);
                Target::PromisedAnswer {
                    question_id,
                    transform: Vec::new(),
                }
            }
            Bootstrap::AwaitingAnswer(question_id) => Target::PromisedAnswer {
                question_id: *question_id,
                transform: Vec::new(),
            },
            Bootstrap::Imported(id) => Target::ImportedCap(*id),
            Bootstrap::Failed(reason) => {
                let reason = reason.clone();
                self.report_failure(kind, Some(reason));
                return Ok(());
            }
        };
        let question_id = self.allocate_question();
        self.questions.insert(
            question_id,
            Question {
                kind,
                deadline: now.checked_add(self.rpc_timeout),
                cancelled: false,
            },
        );
        self.send(&Message::Call(Call {
            question_id,
            target,
            interface_id: REGISTRATION_SERVER_ID,
            method_id,
            params: Payload::of_struct(params),
            send_results_to: SendResultsTo::Caller,
        }))
    }

    /// Reports a failed call: `reason` is an exception reason, `None` a timeout.
    fn report_failure(&mut self, kind: CallKind, reason: Option<String>) {
        let event = match kind {
            CallKind::Bootstrap => return,
            CallKind::Register => ClientEvent::RegistrationFailed(match reason {
                Some(reason) => RegistrationError::Exception { reason },
                None => RegistrationError::Timeout,
            }),
            CallKind::Unregister => ClientEvent::UnregisterFailed(
                reason.unwrap_or_else(|| "unregisterConnection timed out".to_owned()),
            ),
            CallKind::UpdateLocalConfiguration => ClientEvent::LocalConfigurationFailed(
                reason.unwrap_or_else(|| "updateLocalConfiguration timed out".to_owned()),
            ),
        };
        self.events.push_back(event);
    }

    fn handle_message(&mut self, message: Message) -> Result<(), Error> {
        match message {
            Message::Return(ret) => self.handle_return(ret),
            Message::Abort(exception) => {
                self.closed = true;
                self.questions.clear();
                self.events.push_back(ClientEvent::Closed {
                    reason: exception.reason,
                });
                Ok(())
            }
            Message::Call(call) => {
                // The connector exports nothing on the control stream.
                self.send(&Message::Return(Return {
                    answer_id: call.question_id,
                    release_param_caps: true,
                    body: ReturnBody::Exception(Exception::unimplemented(
                        "the connector exports no capability on the control stream",
                    )),
                    no_finish_needed: false,
                }))
            }
            Message::Bootstrap { question_id } => self.send(&Message::Return(Return {
                answer_id: question_id,
                release_param_caps: true,
                body: ReturnBody::Exception(Exception::unimplemented(
                    "the connector has no bootstrap capability on the control stream",
                )),
                no_finish_needed: false,
            })),
            Message::Unimplemented(echo) => {
                self.handle_unimplemented(&echo);
                Ok(())
            }
            // Finishes for our (exception) answers and releases need no action.
            Message::Finish(_) | Message::Release { .. } => Ok(()),
            Message::Unsupported { message, .. } => self.send(&Message::Unimplemented(message)),
        }
    }

    /// The edge could not handle something we sent: fail the matching question.
    fn handle_unimplemented(&mut self, echo: &Object) {
        let question_id = match Message::from_object(echo) {
            Ok(Message::Call(call)) => call.question_id,
            Ok(Message::Bootstrap { question_id }) => question_id,
            _ => return,
        };
        let Some(question) = self.questions.remove(&question_id) else {
            return;
        };
        let reason = "the edge does not implement this call".to_owned();
        if question.kind == CallKind::Bootstrap {
            self.bootstrap = Bootstrap::Failed(reason);
        } else if !question.cancelled {
            self.report_failure(question.kind, Some(reason));
        }
    }

    fn handle_return(&mut self, ret: Return) -> Result<(), Error> {
        let Some(question) = self.questions.remove(&ret.answer_id) else {
            return Err(Error::RpcProtocol(format!(
                "return for unknown question {}",
                ret.answer_id
            )));
        };
        if question.cancelled {
            // Already finished when it timed out; nothing more to send or report.
            return Ok(());
        }
        if question.kind == CallKind::Bootstrap {
            self.resolve_bootstrap(&ret);
            if !ret.no_finish_needed {
                // Keep the capability: later calls target the import.
                let finish = Finish {
                    question_id: ret.answer_id,
                    release_result_caps: false,
                };
                self.outbox.extend(finish.encode());
            }
            return Ok(());
        }
        if !ret.no_finish_needed {
            let finish = Finish {
                question_id: ret.answer_id,
                release_result_caps: true,
            };
            self.outbox.extend(finish.encode());
        }
        let payload = match ret.body {
            ReturnBody::Results(payload) => payload,
            ReturnBody::Exception(exception) => {
                self.report_failure(question.kind, Some(exception.reason));
                return Ok(());
            }
            ReturnBody::Canceled => {
                self.report_failure(question.kind, Some("call was canceled".to_owned()));
                return Ok(());
            }
            other @ (ReturnBody::ResultsSentElsewhere
            | ReturnBody::TakeFromOtherQuestion(_)
            | ReturnBody::AcceptFromThirdParty) => {
                self.report_failure(
                    question.kind,
                    Some(format!("unsupported return kind {other:?}")),
                );
                return Ok(());
            }
        };
        let event = match question.kind {
            CallKind::Register => registration_event(&payload),
            CallKind::Unregister => ClientEvent::Unregistered,
            CallKind::UpdateLocalConfiguration => ClientEvent::LocalConfigurationUpdated,
            CallKind::Bootstrap => return Ok(()),
        };
        self.events.push_back(event);
        Ok(())
    }

    fn resolve_bootstrap(&mut self, ret: &Return) {
        self.bootstrap = match &ret.body {
            ReturnBody::Results(payload) => match &payload.content {
                Content::Capability(index) => match payload.cap_table.get(*index as usize) {
                    Some(CapDescriptor::SenderHosted(id) | CapDescriptor::SenderPromise(id)) => {
                        Bootstrap::Imported(*id)
                    }
                    _ => Bootstrap::Failed("bootstrap answer has no usable capability".to_owned()),
                },
                _ => Bootstrap::Failed("bootstrap answer is not a capability".to_owned()),
            },
            ReturnBody::Exception(exception) => Bootstrap::Failed(exception.reason.clone()),
            _ => Bootstrap::Failed("bootstrap was not answered with results".to_owned()),
        };
    }
}

/// The event for a `registerConnection` result payload.
fn registration_event(payload: &Payload) -> ClientEvent {
    let response = payload.read_struct::<register_connection_results::Owned, _>(
        "registerConnection results",
        ConnectionResponse::read_results,
    );
    match response {
        Ok(ConnectionResponse::Details(details)) => {
            if details.connection_id().is_some() {
                ClientEvent::Registered(details)
            } else {
                ClientEvent::RegistrationFailed(RegistrationError::InvalidResponse {
                    problem: format!(
                        "connection uuid is {} bytes, expected 16",
                        details.uuid.len()
                    ),
                })
            }
        }
        Ok(ConnectionResponse::Error(error)) => {
            ClientEvent::RegistrationFailed(RegistrationError::from_connection_error(&error))
        }
        Err(e) => ClientEvent::RegistrationFailed(RegistrationError::InvalidResponse {
            problem: e.to_string(),
        }),
    }
}
