#!/usr/bin/env bash
# Soak test: DURATION seconds of mixed, rate-limited traffic against a release
# `culvert serve` while its config is swapped every PUSH_EVERY s, a backend is killed
# and restarted every FLAP_EVERY s, the tunnel edge simulator restarts every
# EDGE_EVERY s and misbehaving clients poke it. Reports requests sent/failed per
# traffic kind (failures inside a flap or edge-restart window counted separately),
# Culvert's RSS and open fds every SAMPLE_EVERY s with a flat/growing verdict, and
# culvert_refused_total / culvert_panics_total from /metrics at the end. Exits 1 if
# any check fails (see bench/README.md, "Soak").
#
# Not part of the test suite (scripts/test and CI never call it).
#
# Knobs (environment), defaults in brackets:
#   DURATION [3600]     seconds of traffic
#   WARMUP [DURATION/6, at most 300]   the RSS/fd baseline is the first sample after it
#   SAMPLE_EVERY [10]   seconds between RSS/fd samples
#   PUSH_EVERY [1]      seconds between PUT /config (alternating config-a/config-b)
#   FLAP_EVERY [60] FLAP_DOWN [3] FLAP_GRACE [1]   backend kills (SIGKILL; echo-a, echo-g,
#                       echo-b in turn), seconds down, seconds after it is back that
#                       failures still count as "during flap"
#   EDGE_EVERY [300, DURATION/2 for runs under 600 s] EDGE_DOWN [3]
#   EDGE_RECONNECT_MAX [60]   edge simulator restarts (SIGTERM and SIGKILL in turn), the
#                       seconds it stays down, and how long the tunnel may take to
#                       re-register before the check fails
#   RATE_H1 [800] CONNS_H1 [4]   HTTP/1.1 keep-alive, wrk (paced by pace.lua)
#   RATE_H1_CLOSE [200]          HTTP/1.1, new connection per request (clients.py)
#   RATE_H2C [500] RATE_H2TLS [400] RATE_GRPC [400] H2_CONNS [2]   h2load --rps
#   WS_RATE [5] WS_MESSAGES [10] WebSocket sessions per second, messages per session
#   RATE_TUNNEL [200]            requests/s through the edge simulator (clients.py)
#   SLOWLORIS [16]      connections held with an unfinished head (abuse.py)
#   HEADER_TIMEOUT [30] Culvert's --header-read-timeout, seconds
#   CHUNK [15]          seconds per wrk/h2load run (they run back to back)
#   WORKERS [2]         culvert --workers
#   TUNNEL_PROTOCOL [auto]       culvert --tunnel-protocol (quic, http2, auto)
#   SETTLE [5]          seconds after the load stops before the fds are counted again
#   SKIP_BUILD=1        use the binaries already in $CARGO_TARGET_DIR/release
#   CULVERT_BIN         the culvert binary (default $CARGO_TARGET_DIR/release/culvert)
#   CARGO_TARGET_DIR    default <repo>/target
#   OUT                 also write the report there (it is always in the run dir)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

DURATION=${DURATION:-3600}
default_warmup=$((DURATION / 6 > 300 ? 300 : DURATION / 6))
WARMUP=${WARMUP:-$default_warmup}
SAMPLE_EVERY=${SAMPLE_EVERY:-10}
PUSH_EVERY=${PUSH_EVERY:-1}
FLAP_EVERY=${FLAP_EVERY:-60}
FLAP_DOWN=${FLAP_DOWN:-3}
FLAP_GRACE=${FLAP_GRACE:-1}
default_edge=$((DURATION < 600 ? DURATION / 2 : 300))
EDGE_EVERY=${EDGE_EVERY:-$default_edge}
EDGE_DOWN=${EDGE_DOWN:-3}
EDGE_RECONNECT_MAX=${EDGE_RECONNECT_MAX:-60}
RATE_H1=${RATE_H1:-800}
CONNS_H1=${CONNS_H1:-4}
RATE_H1_CLOSE=${RATE_H1_CLOSE:-200}
RATE_H2C=${RATE_H2C:-500}
RATE_H2TLS=${RATE_H2TLS:-400}
RATE_GRPC=${RATE_GRPC:-400}
H2_CONNS=${H2_CONNS:-2}
WS_RATE=${WS_RATE:-5}
WS_MESSAGES=${WS_MESSAGES:-10}
RATE_TUNNEL=${RATE_TUNNEL:-200}
SLOWLORIS=${SLOWLORIS:-16}
HEADER_TIMEOUT=${HEADER_TIMEOUT:-30}
CHUNK=${CHUNK:-15}
WORKERS=${WORKERS:-2}
TUNNEL_PROTOCOL=${TUNNEL_PROTOCOL:-auto}
SETTLE=${SETTLE:-5}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

# Loopback ports of their own, so this can run beside the other benches or the demo.
HTTP_PORT=18300
CONTROL_PORT=18301
FRONT_PORT=18310
TLS_PORT=18343
EDGE_PORTS=(17864 17865) # two HA tunnel connections
declare -A BACKEND_PORT=([a]=19041 [b]=19042 [g]=19043)
declare -A BACKEND_PROTO=([a]=http1 [b]=http1 [g]=h2c)
declare -A BACKEND_PID=()
CONTROL=http://127.0.0.1:$CONTROL_PORT
EDGES=() EDGE_FLAGS=()
for port in "${EDGE_PORTS[@]}"; do
    EDGES+=("127.0.0.1:$port")
    EDGE_FLAGS+=(--tunnel-edge "127.0.0.1:$port")
done
GRPC_PATH=/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/Echo

RUN_DIR=$(mktemp -d /tmp/culvert-soak.XXXXXX)
PIDS=()

log() { printf '[soak %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# shellcheck source=../lib/process.sh
source "$HERE/../lib/process.sh"

trap cleanup EXIT
trap 'exit 130' INT TERM

meta() { printf '%s %s\n' "$1" "$2" >>"$RUN_DIR/meta.txt"; }
now_us() { local t=$EPOCHREALTIME; echo $((10#${t/./})); }
us_to_s() { printf '%d.%06d' $(($1 / 1000000)) $(($1 % 1000000)); }

render() { # template version
    local text
    text=$(<"$1")
    text=${text//@VERSION@/$2}
    text=${text//@HTTP_PORT@/$HTTP_PORT}
    text=${text//@TLS_PORT@/$TLS_PORT}
    text=${text//@BACKEND_A@/127.0.0.1:${BACKEND_PORT[a]}}
    text=${text//@BACKEND_B@/127.0.0.1:${BACKEND_PORT[b]}}
    text=${text//@BACKEND_G@/127.0.0.1:${BACKEND_PORT[g]}}
    text=${text//@CERT@/$RUN_DIR/cert.pem}
    text=${text//@KEY@/$RUN_DIR/key.pem}
    printf '%s\n' "$text"
}

# Reaps a process that has exited (or been killed) and drops it from PIDS.
reap() {
    local pid=$1 keep=() p
    wait "$pid" 2>/dev/null || true
    for p in "${PIDS[@]}"; do [[ $p == "$pid" ]] || keep+=("$p"); done
    PIDS=("${keep[@]}")
}

BACKEND_STARTS=0
start_backend() { # a|b|g
    BACKEND_STARTS=$((BACKEND_STARTS + 1))
    start_bg "echo-$1.$BACKEND_STARTS" - "$ECHO_BIN" --listen "127.0.0.1:${BACKEND_PORT[$1]}" \
        --name "echo-$1" --protocol "${BACKEND_PROTO[$1]}"
    BACKEND_PID[$1]=$STARTED
}

SIM_STARTS=0
start_sim() {
    SIM_STARTS=$((SIM_STARTS + 1))
    start_bg "sim.$SIM_STARTS" - "$SIM_BIN" --quic "${EDGES[@]}" --h2 "${EDGES[@]}" \
        --http "127.0.0.1:$FRONT_PORT" --state-dir "$RUN_DIR/sim" --quiet
    SIM_PID=$STARTED
}

# Tunnel connections the simulator holds registered (0 when it does not answer).
sim_registered() {
    curl -s --max-time 1 "http://127.0.0.1:$FRONT_PORT/_sim/status" 2>/dev/null |
        grep -Eo '"state": *"registered"' | wc -l || true
}

# The transports of the registered tunnel connections, as "2 quic" or "1 http2, 1 quic".
sim_transports() {
    curl -s --max-time 1 "http://127.0.0.1:$FRONT_PORT/_sim/status" 2>/dev/null | python3 -c '
import collections, json, sys
try:
    c = collections.Counter(x["transport"] for x in json.load(sys.stdin)["connections"] if x["state"] == "registered")
except ValueError:
    c = {}
print(", ".join(f"{n} {t}" for t, n in sorted(c.items())) or "none")' 2>/dev/null || echo "?"
}

listening() { ! port_free "$1"; }

# Runs a load tool in chunks of CHUNK s until the traffic deadline: the function
# named by $2 execs it, given the chunk's length and output base path. One line per
# chunk in chunks-KIND.tsv (index, start, end, exit code).
chunk_loop() { # kind args_function
    local kind=$1 build=$2 i=0 start_us left base rc child=''
    mkdir -p "$RUN_DIR/$kind"
    # Stopped early (Culvert died, Ctrl-C): SIGINT makes wrk print its summary (its
    # own handler; background jobs otherwise ignore SIGINT), TERM a second later for
    # h2load; the chunk is recorded either way.
    trap 'if [[ -n $child ]]; then stop_chunk; end_chunk; fi; exit 0' TERM
    while :; do
        start_us=$(now_us)
        left=$(((TRAFFIC_END_US - start_us) / 1000000))
        ((left >= 1)) || break
        ((left > CHUNK)) && left=$CHUNK
        base=$RUN_DIR/$kind/$(printf '%04d' "$i")
        rc=0
        "$build" "$left" "$base" &
        child=$!
        wait "$child" || rc=$?
        child=''
        end_chunk
        i=$((i + 1))
    done
}

stop_chunk() {
    local _
    kill -INT "$child" 2>/dev/null || true
    for _ in $(seq 10); do
        alive "$child" || break
        sleep 0.1
    done
    kill -TERM "$child" 2>/dev/null || true
    rc=0
    wait "$child" || rc=$?
}

# (chunk_loop's) One line in chunks-KIND.tsv; of h2load's per-request log only the
# rows of failed requests (status -1, 4xx, 5xx) are kept.
end_chunk() {
    printf '%d\t%s\t%s\t%d\n' "$i" "$(us_to_s "$start_us")" "$(us_to_s "$(now_us)")" "$rc" \
        >>"$RUN_DIR/chunks-$kind.tsv"
    if [[ -e $base.log ]]; then
        awk -F'\t' '$2 < 200 || $2 >= 400' "$base.log" >"$base.fail.tsv" || true
        rm -f "$base.log"
    fi
}

# One tool run each (length base): exec, so the chunk loop's child is the tool.
run_h1() {
    SOAK_DELAY_MS=$((CONNS_H1 * 1000 / RATE_H1)) SOAK_FAIL_FILE=$RUN_DIR/h1/fail.tsv \
        exec wrk -t1 -c"$CONNS_H1" -d"${1}s" --timeout 5s -s "$HERE/pace.lua" \
        -H 'Host: soak.example' "http://127.0.0.1:$HTTP_PORT/h1" >"$2.txt" 2>&1
}
h2load_run() { # length base rate url extra...
    local len=$1 base=$2 rate=$3 url=$4
    shift 4
    exec h2load -c"$H2_CONNS" -m8 --rps="$(awk -v r="$rate" -v c="$H2_CONNS" 'BEGIN { printf "%g", r / c }')" \
        -D "$len" --log-file="$base.log" "$@" "$url" >"$base.txt" 2>&1
}
run_h2c() { h2load_run "$1" "$2" "$RATE_H2C" "http://127.0.0.1:$HTTP_PORT/h2c"; }
run_h2tls() { h2load_run "$1" "$2" "$RATE_H2TLS" "https://127.0.0.1:$TLS_PORT/h2tls"; }
run_grpc() {
    h2load_run "$1" "$2" "$RATE_GRPC" "http://127.0.0.1:$HTTP_PORT$GRPC_PATH" \
        -d "$RUN_DIR/grpc-body.bin" -H 'content-type: application/grpc' -H 'te: trailers'
}

sample() { # -> samples.tsv: epoch, RSS KiB, fds, threads
    local pid=$1 rss threads fds
    [[ -r /proc/$pid/status ]] || return 0
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    threads=$(awk '/^Threads:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    fds=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    printf '%s\t%s\t%s\t%s\n' "$EPOCHREALTIME" "${rss:-0}" "$fds" "${threads:-0}"
}

# utime+stime, in seconds, of this shell's reaped children and their descendants.
# `times` must run in this shell (in a $(...) it would report the subshell's), so
# it writes to a file.
children_cpu() {
    times >"$RUN_DIR/times.txt"
    tail -n 1 "$RUN_DIR/times.txt" |
        awk '{ s = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%.2f\n", s }' >"$RUN_DIR/cpu.txt"
}

push_config() { # version
    local template code
    if (($1 % 2)); then template=$HERE/config-a.json.in; else template=$HERE/config-b.json.in; fi
    code=$(render "$template" "$1" | curl -s -o /dev/null -w '%{http_code} %{time_total}' \
        --max-time 5 -X PUT -H 'Content-Type: application/json' --data-binary @- \
        "$CONTROL/config" || true)
    printf '%s %s %s\n' "$EPOCHREALTIME" "$1" "${code:-000 0}" >>"$RUN_DIR/pushes.log"
}

main() {
    ulimit -n "$(ulimit -Hn)"
    install_missing wrk:wrk h2load:nghttp2-client curl:curl openssl:openssl
    local cmd
    for cmd in wrk h2load curl openssl python3 ss; do
        command -v "$cmd" >/dev/null || {
            log "missing $cmd"
            exit 1
        }
    done
    if [[ ${SKIP_BUILD:-0} != 1 ]]; then
        log "building culvert, culvert-echo and culvert-edge-sim (release) into $TARGET_DIR"
        # Two builds: the simulator's dependency features must not reach the culvert
        # binary (Cargo unifies features across the packages of one build).
        (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR nice -n 10 \
            cargo build --release -p culvert -p culvert-bench --bins &&
            CARGO_TARGET_DIR=$TARGET_DIR nice -n 10 \
            cargo build --release -p culvert-edge-sim --bins)
    fi
    CULVERT_BIN=${CULVERT_BIN:-$TARGET_DIR/release/culvert}
    ECHO_BIN=$TARGET_DIR/release/culvert-echo
    SIM_BIN=$TARGET_DIR/release/culvert-edge-sim
    for cmd in "$CULVERT_BIN" "$ECHO_BIN" "$SIM_BIN"; do
        [[ -x $cmd ]] || {
            log "missing $cmd (build it, or unset SKIP_BUILD)"
            exit 1
        }
    done
    require_free_ports "$HTTP_PORT" "$CONTROL_PORT" "$FRONT_PORT" "$TLS_PORT" "${EDGE_PORTS[@]}" \
        "${BACKEND_PORT[a]}" "${BACKEND_PORT[b]}" "${BACKEND_PORT[g]}"

    make_localhost_cert "$RUN_DIR"
    printf '\0\0\0\0\0' >"$RUN_DIR/grpc-body.bin" # one empty, uncompressed EchoRequest
    start_backend a
    start_backend b
    start_backend g
    start_sim
    local _
    for _ in $(seq 100); do [[ -s $RUN_DIR/sim/tunnel-token ]] && break; sleep 0.1; done
    [[ -s $RUN_DIR/sim/tunnel-token ]] || {
        log "the edge simulator did not start; see $RUN_DIR/sim.1.out"
        exit 1
    }
    render "$HERE/config-a.json.in" 1 >"$RUN_DIR/initial.json"
    start_bg culvert - "$CULVERT_BIN" serve --config "$RUN_DIR/initial.json" \
        --control "127.0.0.1:$CONTROL_PORT" --workers "$WORKERS" --access-log-sample 0 \
        --drain-grace 2s --header-read-timeout "${HEADER_TIMEOUT}s" \
        --tunnel-token-file "$RUN_DIR/sim/tunnel-token" "${EDGE_FLAGS[@]}" \
        --tunnel-ca-file "$RUN_DIR/sim/ca.pem" --tunnel-protocol "$TUNNEL_PROTOCOL"
    CULVERT_PID=$STARTED
    local url
    for url in "$CONTROL/readyz" "http://127.0.0.1:$HTTP_PORT/" "https://127.0.0.1:$TLS_PORT/" \
        "http://127.0.0.1:$FRONT_PORT/"; do
        wait_http "$url" 60 || {
            log "$url did not come up; logs in $RUN_DIR"
            exit 1
        }
    done
    # Every HA connection registered, and the count steady for 2 s.
    local tunnels=0 steady=0
    for _ in $(seq 150); do
        local n
        n=$(sim_registered)
        if ((n > 0 && n == tunnels)); then steady=$((steady + 1)); else steady=0; fi
        tunnels=$n
        ((steady >= 10)) && break
        sleep 0.2
    done
    ((tunnels > 0)) || {
        log "no tunnel connection registered; logs in $RUN_DIR"
        exit 1
    }
    log "culvert pid $CULVERT_PID ($WORKERS workers), $tunnels tunnel connections; run dir $RUN_DIR"

    children_cpu
    BASE_CPU=$(<"$RUN_DIR/cpu.txt")
    local t0_us
    t0_us=$(now_us)
    T_END_US=$((t0_us + DURATION * 1000000))
    TRAFFIC_END_US=$((T_END_US + 2000000)) # the last sample is taken under load
    local traffic_end
    traffic_end=$(us_to_s "$TRAFFIC_END_US")
    local ab="echo-a,echo-b"
    meta t0 "$(us_to_s "$t0_us")"
    meta deadline "$(us_to_s "$T_END_US")"
    meta warmup "$WARMUP"
    meta sample_every "$SAMPLE_EVERY"
    meta push_every "$PUSH_EVERY"
    meta flap_grace "$FLAP_GRACE"
    meta flap_down "$FLAP_DOWN"
    meta settle "$SETTLE"
    meta workers "$WORKERS"
    meta tunnel_protocol "$TUNNEL_PROTOCOL"
    meta header_timeout "$HEADER_TIMEOUT"
    meta commit "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD -- proxy router connector wire 2>/dev/null || echo '+dirty')"
    meta machine "$(nproc) CPUs, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
    meta kinds "h1:wrk h1-close:py h2c:h2load https-h2:h2load grpc:h2load-grpc ws:py tunnel:py"
    meta kind_backends "h1=$ab h1-close=$ab h2c=$ab https-h2=$ab grpc=echo-g ws=$ab tunnel=$ab"
    meta load "h1 keep-alive $RATE_H1 (wrk, $CONNS_H1 conns), h1 new connection $RATE_H1_CLOSE, h2c $RATE_H2C, HTTPS h2 $RATE_H2TLS, gRPC $RATE_GRPC (h2load, $H2_CONNS conns each), WebSocket $WS_RATE sessions × $WS_MESSAGES messages, tunnel $RATE_TUNNEL; PUT /config every $PUSH_EVERY s; slowloris $SLOWLORIS conns, a smuggling replay every 0.5 s, a mid-body drop and a connect-drop every 0.25 s, TLS garbage and a TLS handshake-drop every 1 s"

    log "traffic for ${DURATION}s (warm-up ${WARMUP}s); flaps every ${FLAP_EVERY}s, edge restarts every ${EDGE_EVERY}s"
    local traffic=()
    chunk_loop h1 run_h1 &
    traffic+=("$!")
    chunk_loop h2c run_h2c &
    traffic+=("$!")
    chunk_loop https-h2 run_h2tls &
    traffic+=("$!")
    chunk_loop grpc run_grpc &
    traffic+=("$!")
    PIDS+=("${traffic[@]}")
    start_bg client-h1-close - python3 "$HERE/clients.py" h1-close --port "$HTTP_PORT" \
        --rate "$RATE_H1_CLOSE" --workers 4 --deadline "$traffic_end" --out "$RUN_DIR"
    traffic+=("$STARTED")
    start_bg client-ws - python3 "$HERE/clients.py" ws --port "$HTTP_PORT" --rate "$WS_RATE" \
        --workers 2 --messages "$WS_MESSAGES" --deadline "$traffic_end" --out "$RUN_DIR"
    traffic+=("$STARTED")
    start_bg client-tunnel - python3 "$HERE/clients.py" tunnel --port "$FRONT_PORT" \
        --rate "$RATE_TUNNEL" --workers 4 --deadline "$traffic_end" --out "$RUN_DIR"
    traffic+=("$STARTED")
    start_bg abuse - python3 "$HERE/abuse.py" --port "$HTTP_PORT" --tls-port "$TLS_PORT" \
        --cases "$ROOT/proxy/tests/data/smuggling.json" --header-timeout "$HEADER_TIMEOUT" \
        --slowloris "$SLOWLORIS" --deadline "$traffic_end" --out "$RUN_DIR"
    traffic+=("$STARTED")

    # The scheduler: config pushes, samples, backend flaps and edge restarts, all
    # from this shell so every PID it starts is in PIDS.
    local version=2 next_push=$t0_us next_sample=$t0_us now
    local flap_n=0 next_flap=$((t0_us + FLAP_EVERY * 1000000)) flap_state=idle flap_name='' flap_down=0 flap_at=0
    local edge_n=0 next_edge=$((t0_us + EDGE_EVERY * 500000)) edge_state=idle edge_sig='' edge_down=0 edge_at=0 edge_first=-
    local order=(a g b) sigs=(TERM KILL) reg
    : >"$RUN_DIR/windows.tsv"
    local culvert_died=0
    while now=$(now_us) && ((now < T_END_US)); do
        if ! alive "$CULVERT_PID"; then
            log "culvert exited at +$(((now - t0_us) / 1000000))s; stopping the run"
            meta culvert_exited_at "$(us_to_s "$now")"
            culvert_died=1
            break
        fi
        if ((now >= next_push)); then
            push_config "$version"
            version=$((version + 1))
            next_push=$((next_push + PUSH_EVERY * 1000000))
            ((next_push < now)) && next_push=$now
        fi
        if ((now >= next_sample)); then
            sample "$CULVERT_PID" >>"$RUN_DIR/samples.tsv"
            next_sample=$((next_sample + SAMPLE_EVERY * 1000000))
        fi
        # Backend flap: SIGKILL, FLAP_DOWN s down, restart, window ends when it listens.
        case $flap_state in
        idle)
            if ((now >= next_flap && next_flap + (FLAP_DOWN + 10) * 1000000 < T_END_US)); then
                flap_name=${order[flap_n % 3]}
                flap_n=$((flap_n + 1))
                flap_down=$(now_us)
                # (grouped so bash's "Killed" job notice goes nowhere)
                { kill -KILL "${BACKEND_PID[$flap_name]}" || true; reap "${BACKEND_PID[$flap_name]}"; } 2>/dev/null
                log "flap $flap_n: killed echo-$flap_name"
                flap_at=$((flap_down + FLAP_DOWN * 1000000))
                flap_state=down
            fi
            ;;
        down)
            if ((now >= flap_at)); then
                start_backend "$flap_name"
                flap_at=$((now + 10000000))
                flap_state=starting
            fi
            ;;
        starting)
            if listening "${BACKEND_PORT[$flap_name]}" || ((now >= flap_at)); then
                local up=-
                listening "${BACKEND_PORT[$flap_name]}" && up=$(us_to_s "$(now_us)")
                printf 'flap\techo-%s\t%s\t%s\n' "$flap_name" "$(us_to_s "$flap_down")" "$up" >>"$RUN_DIR/windows.tsv"
                [[ $up == - ]] && log "echo-$flap_name did not come back"
                next_flap=$((next_flap + FLAP_EVERY * 1000000))
                flap_state=idle
            fi
            ;;
        esac
        # Edge restart: stop (TERM or KILL in turn), EDGE_DOWN s down, start, window
        # until the first tunnel connection registers again; all of them noted too.
        case $edge_state in
        idle)
            if ((now >= next_edge && next_edge + (EDGE_DOWN + 30) * 1000000 < T_END_US)); then
                edge_sig=${sigs[edge_n % 2]}
                edge_n=$((edge_n + 1))
                # Out of the job table, so bash prints no "Killed" notice; still reaped below.
                disown "$SIM_PID" 2>/dev/null || true
                kill -"$edge_sig" "$SIM_PID" 2>/dev/null || true
                edge_down=$(now_us)
                edge_at=$((edge_down + 5000000))
                edge_first=-
                log "edge restart $edge_n: SIG$edge_sig to the simulator"
                edge_state=stopping
            fi
            ;;
        stopping)
            if ! alive "$SIM_PID" || ((now >= edge_at)); then
                { alive "$SIM_PID" && kill -KILL "$SIM_PID"; reap "$SIM_PID"; } 2>/dev/null
                edge_at=$((now + EDGE_DOWN * 1000000))
                edge_state=down
            fi
            ;;
        down)
            if ((now >= edge_at)); then
                start_sim
                edge_state=waiting
            fi
            ;;
        waiting)
            reg=$(sim_registered)
            if ((reg > 0)) && [[ $edge_first == - ]]; then edge_first=$(us_to_s "$(now_us)"); fi
            if ((reg >= tunnels)) || ((now - edge_down >= EDGE_RECONNECT_MAX * 1000000)); then
                local all=- transports
                ((reg >= tunnels)) && all=$(us_to_s "$(now_us)")
                transports=$(sim_transports)
                printf 'edge\tSIG%s\t%s\t-\t%s\t%s\t%s\n' "$edge_sig" "$(us_to_s "$edge_down")" "$edge_first" "$all" \
                    "$transports" >>"$RUN_DIR/windows.tsv"
                log "edge restart $edge_n: $reg of $tunnels tunnel connections registered again ($transports)"
                next_edge=$((next_edge + EDGE_EVERY * 1000000))
                edge_state=idle
            fi
            ;;
        esac
        sleep 0.2
    done
    sample "$CULVERT_PID" >>"$RUN_DIR/samples.tsv"
    meta tunnel_transports_at_end "$(sim_transports)"
    [[ $flap_state != idle ]] && log "a flap was still in progress at the end (state $flap_state)"
    [[ $edge_state != idle ]] && log "an edge restart was still in progress at the end (state $edge_state)"

    log "load done; waiting for the clients to finish"
    local pid i
    for pid in "${traffic[@]}"; do
        for i in $(seq $((culvert_died ? 0 : 150))); do
            alive "$pid" || break
            sleep 0.2
        done
        stop_pid "$pid"
    done
    sleep "$SETTLE"
    local settled
    settled=$(sample "$CULVERT_PID")
    meta settled_rss_kib "$(cut -f2 <<<"$settled")"
    meta settled_fds "$(cut -f3 <<<"$settled")"
    curl -s --max-time 5 "$CONTROL/metrics" >"$RUN_DIR/metrics.txt" || true
    meta healthz_at_end "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$CONTROL/healthz" || true)"
    meta final_config "$(curl -s --max-time 5 "$CONTROL/config" || echo '?')"
    if alive "$CULVERT_PID"; then meta alive_at_end yes; else meta alive_at_end no; fi
    alive "$CULVERT_PID" &&
        meta culvert_cpu_s "$(awk -v t="$(cpu_ticks "$CULVERT_PID")" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t / hz }')"
    log "stopping everything"
    cleanup
    # CPU of everything the soak started since t0 (the build and the start-up not
    # included): every one of them has been reaped by now.
    children_cpu
    meta total_cpu_s "$(awk -v a="$(<"$RUN_DIR/cpu.txt")" -v b="$BASE_CPU" 'BEGIN { printf "%.1f", a - b }')"

    local rc=0
    python3 "$HERE/report.py" "$RUN_DIR" >"$RUN_DIR/report.md" || rc=$?
    cat "$RUN_DIR/report.md"
    [[ -n ${OUT:-} ]] && cp "$RUN_DIR/report.md" "$OUT"
    return "$rc"
}

main "$@"
