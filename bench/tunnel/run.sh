#!/usr/bin/env bash
# The tunnel path against the plain listener path, through the same Culvert:
#   wrk -> culvert-edge-sim (HTTP front door) -> tunnel stream -> Culvert -> backend
#   wrk -> Culvert's HTTP listener -> backend
# and prints requests/s, p50/p99 latency and Culvert's CPU µs per request for both,
# with their ratio. Not part of the test suite.
#
# Layout (2 cores): Culvert alone on PROXY_CPU; wrk, the simulator and the backend
# (culvert-echo) share LOAD_CPU. The simulator does real work per request (QUIC or
# HTTP/2 to Culvert), so the tunnel row's throughput is bounded by the load core;
# compare the CPU µs per request of Culvert, which is what the tunnel costs it.
#
# Knobs: DURATION=10 WARMUP=2 CONNS=32 TRANSPORT=quic|http2 PROXY_CPU=1 LOAD_CPU=0
#        SKIP_BUILD=1 CARGO_TARGET_DIR (default <repo>/target)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CONNS=${CONNS:-32}
TRANSPORT=${TRANSPORT:-quic}
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

# Loopback ports of their own, so this can run beside the other benches or the demo.
EDGE_PORT=17844
FRONT_PORT=18100
LISTENER_PORT=18180
CONTROL_PORT=18181
BACKEND_PORT=19021
HOST=bench.example

RUN_DIR=$(mktemp -d /tmp/culvert-tunnel-bench.XXXXXX)
CLK_TCK=$(getconf CLK_TCK)
PIDS=()

log() { printf '[tunnel] %s\n' "$*" >&2; }

# shellcheck source=../lib/process.sh
source "$HERE/../lib/process.sh"

trap cleanup EXIT
trap 'exit 130' INT TERM

install_missing wrk:wrk

if [[ -z ${SKIP_BUILD:-} ]]; then
    log "building release binaries (once)"
    # Two builds: the simulator's dependency features must not reach the culvert
    # binary (Cargo unifies features across the packages of one build).
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR nice -n 10 cargo build --release --quiet \
        -p culvert -p culvert-bench --bins &&
        CARGO_TARGET_DIR=$TARGET_DIR nice -n 10 cargo build --release --quiet \
        -p culvert-edge-sim --bins)
fi
BIN=$TARGET_DIR/release

start_bg echo "$LOAD_CPU" "$BIN/culvert-echo" --listen "127.0.0.1:$BACKEND_PORT" --name bench --protocol http1
start_bg sim "$LOAD_CPU" "$BIN/culvert-edge-sim" --quic "127.0.0.1:$EDGE_PORT" --h2 "127.0.0.1:$EDGE_PORT" \
    --http "127.0.0.1:$FRONT_PORT" --state-dir "$RUN_DIR/sim" --quiet
for _ in $(seq 100); do [[ -s $RUN_DIR/sim/tunnel-token ]] && break; sleep 0.1; done
[[ -s $RUN_DIR/sim/tunnel-token ]] || { log "simulator did not start"; cat "$RUN_DIR/sim.out" >&2; exit 1; }

cat >"$RUN_DIR/culvert.json" <<JSON
{"version": 1,
 "listeners": [{"name": "web", "address": "127.0.0.1", "port": $LISTENER_PORT, "protocol": "HTTP"}],
 "httpRoutes": [{"namespace": "bench", "name": "bench", "listeners": ["web"], "hostnames": ["$HOST"],
   "rules": [{"backends": [{"name": "bench", "endpoints": ["127.0.0.1:$BACKEND_PORT"]}]}]}]}
JSON
start_bg culvert "$PROXY_CPU" "$BIN/culvert" serve --config "$RUN_DIR/culvert.json" \
    --control "127.0.0.1:$CONTROL_PORT" --workers 1 --no-access-log --drain-grace 1s \
    --tunnel-token-file "$RUN_DIR/sim/tunnel-token" --tunnel-edge "127.0.0.1:$EDGE_PORT" \
    --tunnel-ca-file "$RUN_DIR/sim/ca.pem" --tunnel-protocol "$TRANSPORT"
CULVERT=$STARTED
wait_http "http://127.0.0.1:$CONTROL_PORT/readyz" 30 || { log "culvert never ready"; cat "$RUN_DIR/culvert.out" >&2; exit 1; }

# One measured wrk run against URL; prints "req/s p50_ms p99_ms culvert_us/req errors".
measure() { # name url
    local name=$1 url=$2 out="$RUN_DIR/$1.txt" before after requests rps p50 p99 errors
    taskset -c "$LOAD_CPU" wrk -t1 -c "$CONNS" -d "${WARMUP}s" -H "Host: $HOST" "$url" >/dev/null
    before=$(cpu_ticks "$CULVERT")
    taskset -c "$LOAD_CPU" wrk -t1 -c "$CONNS" -d "${DURATION}s" --latency -H "Host: $HOST" "$url" >"$out"
    after=$(cpu_ticks "$CULVERT")
    requests=$(awk '/requests in/ {print $1}' "$out")
    rps=$(awk '/^Requests\/sec/ {printf "%.0f", $2}' "$out")
    p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$out")")
    p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$out")")
    errors=$(awk '/Non-2xx|Socket errors/ {n += $NF} END {print n + 0}' "$out")
    awk -v r="$rps" -v a="$p50" -v b="$p99" -v t=$((after - before)) -v hz="$CLK_TCK" -v n="$requests" -v e="$errors" \
        'BEGIN { printf "%s %s %s %.1f %s\n", r, a, b, (n > 0 ? t * 1e6 / hz / n : 0), e }'
}

log "measuring the listener path (${DURATION}s)"
read -r l_rps l_p50 l_p99 l_cpu l_err < <(measure listener "http://127.0.0.1:$LISTENER_PORT/")
log "measuring the tunnel path over $TRANSPORT (${DURATION}s)"
read -r t_rps t_p50 t_p99 t_cpu t_err < <(measure tunnel "http://127.0.0.1:$FRONT_PORT/")

echo "| path | req/s | p50 ms | p99 ms | Culvert CPU µs/req | errors |"
echo "|---|---|---|---|---|---|"
echo "| listener | $l_rps | $l_p50 | $l_p99 | $l_cpu | $l_err |"
echo "| tunnel ($TRANSPORT) | $t_rps | $t_p50 | $t_p99 | $t_cpu | $t_err |"
awk -v a="$t_rps" -v b="$l_rps" -v c="$t_cpu" -v d="$l_cpu" 'BEGIN {
    printf "\ntunnel / listener: req/s %.2f, Culvert CPU per request %.2f\n", (b > 0 ? a / b : 0), (d > 0 ? c / d : 0) }'
echo "(logs in $RUN_DIR; $CONNS connections, ${DURATION}s per path, Culvert on CPU $PROXY_CPU, the rest on CPU $LOAD_CPU)"
