# Culvert's own transcription of the tunnel registration schema, written from the
# facts in connector/PROTOCOL.md §3. Only IDs, ordinals and types matter on the
# wire; names are for readers. Layouts (data words / pointers) are noted per struct
# as capnpc allocates them. The Rust code for it is generated into
# tunnel-proto/src/generated/ by scripts/capnp-generate; tunnel-proto/src/registration/
# maps it to the registration types.
@0xdb8274f9144abc7e;

struct TunnelAuth @0x9496331ab9cd463f {        # 0 / 2
  accountTag @0 :Text;                         # ptr 0
  tunnelSecret @1 :Data;                       # ptr 1
}

struct ClientInfo @0x83ced0145b2f114b {        # 0 / 4
  clientId @0 :Data;                           # ptr 0, 16-byte connector UUID
  features @1 :List(Text);                     # ptr 1
  version @2 :Text;                            # ptr 2
  arch @3 :Text;                               # ptr 3
}

struct ConnectionOptions @0xb4bf9861fe035d04 { # 1 / 2
  client @0 :ClientInfo;                       # ptr 0
  originLocalIp @1 :Data;                      # ptr 1
  replaceExisting @2 :Bool;                    # bit 0
  compressionQuality @3 :UInt8;                # byte 1
  numPreviousAttempts @4 :UInt8;               # byte 2
}

struct ConnectionResponse @0xdbaa9d03d52b62dc { # 1 / 1, discriminant UInt16 at byte 0
  result :union {
    error @0 :ConnectionError;                 # ptr 0
    connectionDetails @1 :ConnectionDetails;   # ptr 0
  }
}

struct ConnectionError @0xf5f383d2785edb86 {   # 2 / 1
  cause @0 :Text;                              # ptr 0
  retryAfter @1 :Int64;                        # bytes 0..8, nanoseconds
  shouldRetry @2 :Bool;                        # bit 64
}

struct ConnectionDetails @0xb5f39f082b9ac18a { # 1 / 2
  uuid @0 :Data;                               # ptr 0, exactly 16 bytes
  locationName @1 :Text;                       # ptr 1
  tunnelIsRemotelyManaged @2 :Bool;            # bit 0
}

interface RegistrationServer @0xf71695ec7fe85497 {
  # params 1 / 3: auth ptr 0, tunnelId ptr 1, options ptr 2, connIndex byte 0;
  # results 0 / 1: result ptr 0.
  registerConnection @0 (auth :TunnelAuth, tunnelId :Data, connIndex :UInt8,
                         options :ConnectionOptions) -> (result :ConnectionResponse);
  # params and results are empty structs.
  unregisterConnection @1 () -> ();
  # params 0 / 1: config ptr 0 (JSON bytes).
  updateLocalConfiguration @2 (config :Data) -> ();
}

struct RegisterUdpSessionResponse @0xab6d5210c1f26687 { # 0 / 2
  err @0 :Text;
  spans @1 :Data;
}

interface SessionManager @0x839445a59fb01686 {
  # params 2 / 3: sessionId ptr 0, dstIp ptr 1, traceContext ptr 2,
  # dstPort UInt16 at byte 0, closeAfterIdleHint Int64 at byte 8.
  registerUdpSession @0 (sessionId :Data, dstIp :Data, dstPort :UInt16,
                         closeAfterIdleHint :Int64, traceContext :Text = "")
                     -> (result :RegisterUdpSessionResponse);
  # params 0 / 2.
  unregisterUdpSession @1 (sessionId :Data, message :Text) -> ();
}

struct UpdateConfigurationResponse @0xdb58ff694ba05cf9 { # 1 / 1
  latestAppliedVersion @0 :Int32;              # byte 0
  err @1 :Text;                                # ptr 0, empty means success
}

interface ConfigurationManager @0xb48edfbdaa25db04 {
  # params 1 / 1: version Int32 at byte 0, config ptr 0; results 0 / 1.
  updateConfiguration @0 (version :Int32, config :Data)
                      -> (result :UpdateConfigurationResponse);
}

interface CloudflaredServer @0xf548cef9dea2a4a1 extends (SessionManager, ConfigurationManager) {}

# The legacy TunnelServer (@0xea58385c65416035) extends RegistrationServer with
# deprecated methods @0..@5 that named tunnels never call; its registration calls
# still carry RegistrationServer's interface ID. It is not transcribed here.
