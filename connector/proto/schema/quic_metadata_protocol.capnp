# Culvert's own transcription of the data-stream request/response schema, written
# from connector/PROTOCOL.md §4.2. Each message follows the data-stream preamble
# (0A 36 CD 12 A1 3E "01"). The Rust code for it is generated into
# tunnel-proto/src/generated/ by scripts/capnp-generate; tunnel-proto/src/connect/
# maps it to ConnectRequest and ConnectResponse.
@0xb29021ef7421cc32;

struct ConnectRequest @0xc47116a1045e4061 {    # 1 / 2
  dest @0 :Text;                               # ptr 0: absolute URL, or IP:port for tcp
  type @1 :ConnectionType;                     # UInt16 at byte 0
  metadata @2 :List(Metadata);                 # ptr 1, composite list
}

enum ConnectionType @0xc52e1bac26d379c8 {
  http @0;
  websocket @1;
  tcp @2;
}

struct Metadata @0xe1446b97bfd1cd37 {          # 0 / 2
  key @0 :Text;                                # ptr 0, case-sensitive
  val @1 :Text;                                # ptr 1
}

struct ConnectResponse @0xb1032ec91cef8727 {   # 0 / 2
  error @0 :Text;                              # ptr 0, empty or null means success
  metadata @1 :List(Metadata);                 # ptr 1
}
