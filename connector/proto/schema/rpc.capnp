# Culvert's own transcription of the part of the Cap'n Proto RPC protocol (two-party,
# level 1) that the control stream speaks, written from connector/PROTOCOL.md §3.1
# and the RPC protocol's wire layout. The file ID, the struct names (from which every
# nested ID is derived) and each field's ordinal and type are those of the standard
# protocol, so every layout is the standard one: `Message` is 1 data word / 1
# pointer, `Call` 3 / 3, `Return` 2 / 1, and so on (noted per struct).
#
# Members are declared up to the highest ordinal the code reads or writes, because
# ordinals must be contiguous and they fix both field offsets and union
# discriminants. Later additions to the standard protocol (message kinds after
# `bootstrap`, `Call` and `Finish` flags after those below, exception details) are
# left out: an unknown message kind reads as "not in schema" and is answered with
# `unimplemented`, and unknown fields are skipped as in any Cap'n Proto struct.
@0xb312981b2552a250;

using ExportId = UInt32;
using ImportId = UInt32;
using QuestionId = UInt32;
using AnswerId = UInt32;

struct Message {                               # 1 / 1, discriminant UInt16 at byte 0
  union {                                      # every member in ptr 0
    unimplemented @0 :Message;                 # echo of a message the peer could not handle
    abort @1 :Exception;
    call @2 :Call;
    return @3 :Return;
    finish @4 :Finish;
    resolve @5 :Resolve;
    release @6 :Release;
    obsoleteSave @7 :AnyPointer;
    bootstrap @8 :Bootstrap;
  }
}

struct Bootstrap {                             # 1 / 1
  questionId @0 :QuestionId;                   # bytes 0..4
  deprecatedObjectId @1 :AnyPointer;           # ptr 0
}

struct Call {                                  # 3 / 3
  questionId @0 :QuestionId;                   # bytes 0..4
  target @1 :MessageTarget;                    # ptr 0
  interfaceId @2 :UInt64;                      # bytes 8..16
  methodId @3 :UInt16;                         # bytes 4..6
  params @4 :Payload;                          # ptr 1
  sendResultsTo :union {                       # discriminant UInt16 at byte 6
    caller @5 :Void;
    yourself @6 :Void;
    thirdParty @7 :AnyPointer;                 # ptr 2
  }
  allowThirdPartyTailCall @8 :Bool = false;    # bit 128
}

struct Return {                                # 2 / 1
  answerId @0 :AnswerId;                       # bytes 0..4
  releaseParamCaps @1 :Bool = true;            # bit 32
  union {                                      # discriminant UInt16 at byte 6
    results @2 :Payload;                       # ptr 0
    exception @3 :Exception;                   # ptr 0
    canceled @4 :Void;
    resultsSentElsewhere @5 :Void;
    takeFromOtherQuestion @6 :QuestionId;      # bytes 8..12
    acceptFromThirdParty @7 :AnyPointer;       # ptr 0
  }
  noFinishNeeded @8 :Bool = false;             # bit 33
}

struct Finish {                                # 1 / 0
  questionId @0 :QuestionId;                   # bytes 0..4
  releaseResultCaps @1 :Bool = true;           # bit 32
}

struct Resolve {                               # 1 / 1, read only as "not supported"
  promiseId @0 :ExportId;                      # bytes 0..4
  union {                                      # discriminant UInt16 at byte 4
    cap @1 :CapDescriptor;                     # ptr 0
    exception @2 :Exception;                   # ptr 0
  }
}

struct Release {                               # 1 / 0
  id @0 :ImportId;                             # bytes 0..4
  referenceCount @1 :UInt32;                   # bytes 4..8
}

struct MessageTarget {                         # 1 / 1
  union {                                      # discriminant UInt16 at byte 4
    importedCap @0 :ImportId;                  # bytes 0..4
    promisedAnswer @1 :PromisedAnswer;         # ptr 0
  }
}

struct Payload {                               # 0 / 2
  content @0 :AnyPointer;                      # ptr 0: the params or results struct, or a capability
  capTable @1 :List(CapDescriptor);            # ptr 1: what the content's capability pointers name
}

struct CapDescriptor {                         # 1 / 1
  union {                                      # discriminant UInt16 at byte 0
    none @0 :Void;
    senderHosted @1 :ExportId;                 # bytes 4..8
    senderPromise @2 :ExportId;                # bytes 4..8
    receiverHosted @3 :ImportId;               # bytes 4..8
    receiverAnswer @4 :PromisedAnswer;         # ptr 0
    thirdPartyHosted @5 :ThirdPartyCapDescriptor; # ptr 0
  }
  attachedFd @6 :UInt8 = 0xff;                 # byte 2
}

struct PromisedAnswer {                        # 1 / 1
  questionId @0 :QuestionId;                   # bytes 0..4
  transform @1 :List(Op);                      # ptr 0

  struct Op {                                  # 1 / 0
    union {                                    # discriminant UInt16 at byte 0
      noop @0 :Void;
      getPointerField @1 :UInt16;              # bytes 2..4
    }
  }
}

struct ThirdPartyCapDescriptor {               # 1 / 1
  id @0 :AnyPointer;                           # ptr 0
  vineId @1 :ExportId;                         # bytes 0..4
}

struct Exception {                             # 1 / 2
  reason @0 :Text;                             # ptr 0
  type @3 :Type;                               # UInt16 at byte 4
  obsoleteIsCallersFault @1 :Bool;             # bit 0
  obsoleteDurability @2 :UInt16;               # bytes 2..4
  trace @4 :Text;                              # ptr 1

  enum Type {
    failed @0;
    overloaded @1;
    disconnected @2;
    unimplemented @3;
  }
}
