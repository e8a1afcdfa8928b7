#!/usr/bin/env bash
# TLS passthrough beside HAProxy: Culvert's TLS listener (TLSRoute by SNI) and
# HAProxy in `mode tcp` routing on `req.ssl_sni`, both in front of one nginx that
# terminates the TLS itself, plus nginx on its own. Prints a Markdown report.
#
# Not part of the test suite: it needs root for apt-get, takes minutes, and its
# numbers depend on the machine.
#
# Scenarios (wrk, the client's TLS ends at the backend):
#   close    CONNS connections, each request on a new connection (`Connection:
#            close`): what a passthrough connection costs, as proxy CPU per connection
#   stream   STREAM_CONNS keep-alive connections fetching a 1 MiB file: bulk
#            throughput, as proxy CPU per GiB spliced
#
# Layout (2 cores): the proxy under test is pinned alone to PROXY_CPU; wrk and the
# backend share LOAD_CPU. One proxy runs at a time, one worker each (Culvert
# --workers 1, HAProxy nbthread 1). Binds 127.0.0.1 only (Culvert 18444, control
# 18081; HAProxy 18454; nginx 19443) and stops what it started on exit.
#
# Knobs: DURATION=10, WARMUP=2, CONNS=64, STREAM_CONNS=8, ROUNDS=1 (the systems run
# interleaved per scenario; with more rounds each column is the median),
# SYSTEMS="direct culvert haproxy", SCENARIOS="close stream", PROXY_CPU=1,
# LOAD_CPU=0, SKIP_BUILD=1, CULVERT_BIN, CARGO_TARGET_DIR, OUT.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CONNS=${CONNS:-64}
STREAM_CONNS=${STREAM_CONNS:-8}
ROUNDS=${ROUNDS:-1}
SYSTEMS=${SYSTEMS:-direct culvert haproxy}
SCENARIOS=${SCENARIOS:-close stream}
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
CULVERT_BIN=${CULVERT_BIN:-$TARGET_DIR/release/culvert}
RUN_DIR=$(mktemp -d /tmp/culvert-passthrough.XXXXXX)
OUT=${OUT:-$RUN_DIR/report.md}
PIDS=()
TICK=$(getconf CLK_TCK)

log() { printf '[passthrough] %s\n' "$*" >&2; }

# shellcheck source=../lib/process.sh
source "$HERE/../lib/process.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM

install_missing nginx:nginx haproxy:haproxy wrk:wrk curl:curl openssl:openssl
require_free_ports 18444 18081 18454 19443
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR nice -n 10 cargo build --release -p culvert --bin culvert)
fi

make_localhost_cert "$RUN_DIR"
head -c $((1024 * 1024)) /dev/urandom >"$RUN_DIR/1m"
cat >"$RUN_DIR/backend.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
error_log $RUN_DIR/backend.err warn;
pid $RUN_DIR/backend.pid;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    ssl_session_cache shared:tls:10m;
    server {
        listen 127.0.0.1:19443 ssl reuseport;
        ssl_certificate $RUN_DIR/cert.pem;
        ssl_certificate_key $RUN_DIR/key.pem;
        root $RUN_DIR;
        location = / { return 200 "passthrough\n"; }
    }
}
EOF
cat >"$RUN_DIR/culvert.json" <<EOF
{"version": 1,
 "listeners": [{"name": "tls", "port": 18444, "protocol": "TLS", "hostname": "localhost"}],
 "tlsRoutes": [{"namespace": "bench", "name": "tls", "listeners": ["tls"],
   "hostnames": ["localhost"], "backends": [{"name": "nginx", "endpoints": ["127.0.0.1:19443"]}]}]}
EOF
cat >"$RUN_DIR/haproxy.cfg" <<EOF
global
    nbthread 1
    maxconn 8000
defaults
    mode tcp
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend tls
    bind 127.0.0.1:18454
    tcp-request inspect-delay 5s
    tcp-request content accept if { req.ssl_hello_type 1 }
    use_backend nginx if { req.ssl_sni -i localhost }
backend nginx
    server nginx 127.0.0.1:19443
EOF

start_bg backend "$LOAD_CPU" nginx -c "$RUN_DIR/backend.conf" -p "$RUN_DIR"
wait_http https://localhost:19443/ || { log "backend did not come up"; exit 1; }

port_of() { case $1 in direct) echo 19443 ;; culvert) echo 18444 ;; haproxy) echo 18454 ;; esac; }

start_proxy() { # system; sets PROXY_PID (empty for direct)
    PROXY_PID=
    case $1 in
    direct) return 0 ;;
    culvert)
        start_bg culvert "$PROXY_CPU" "$CULVERT_BIN" serve --config "$RUN_DIR/culvert.json" \
            --workers 1 --control 127.0.0.1:18081 --no-access-log ;;
    haproxy) start_bg haproxy "$PROXY_CPU" haproxy -db -f "$RUN_DIR/haproxy.cfg" ;;
    esac
    PROXY_PID=$STARTED
    wait_http "https://localhost:$(port_of "$1")/" || { log "$1 did not come up"; exit 1; }
}

# wrk's figure on the line starting with `label`, in base units (requests or bytes).
wrk_value() { # label file
    awk -v label="$1" '$1 == label {
        v = $2; n = v + 0
        if (v ~ /KB$/) n *= 1024; else if (v ~ /MB$/) n *= 1048576; else if (v ~ /GB$/) n *= 1073741824
        printf "%.0f", n }' "$2"
}

# One measured run; prints "rate cpu_per_unit" (connections/s and CPU µs per
# connection, or MiB/s and CPU ms per GiB).
measure() { # system scenario round
    local system=$1 scenario=$2 round=$3 port url args out before after cpu
    port=$(port_of "$system")
    case $scenario in
    close) url=https://localhost:$port/ args=(-c "$CONNS" -H "Connection: close") ;;
    stream) url=https://localhost:$port/1m args=(-c "$STREAM_CONNS") ;;
    esac
    start_proxy "$system"
    taskset -c "$LOAD_CPU" wrk -t1 "${args[@]}" -d "${WARMUP}s" "$url" >/dev/null 2>&1 || true
    out=$RUN_DIR/$system-$scenario-$round.wrk
    before=0
    [[ -n $PROXY_PID ]] && before=$(cpu_ticks "$PROXY_PID")
    taskset -c "$LOAD_CPU" wrk -t1 "${args[@]}" -d "${DURATION}s" "$url" >"$out" 2>&1
    after=0
    [[ -n $PROXY_PID ]] && after=$(cpu_ticks "$PROXY_PID")
    [[ -n $PROXY_PID ]] && stop_pid "$PROXY_PID"
    cpu=$(awk -v t=$((after - before)) -v hz="$TICK" 'BEGIN { printf "%.3f", t / hz }')
    local requests bytes
    requests=$(wrk_value Requests/sec: "$out")
    bytes=$(wrk_value Transfer/sec: "$out")
    case $scenario in
    close) awk -v r="$requests" -v c="$cpu" -v d="$DURATION" \
        'BEGIN { printf "%.0f %.1f\n", r, (r > 0 ? c / (r * d) * 1e6 : 0) }' ;;
    stream) awk -v b="$bytes" -v c="$cpu" -v d="$DURATION" \
        'BEGIN { printf "%.0f %.1f\n", b / 1048576, (b > 0 ? c / (b * d / 1073741824) * 1000 : 0) }' ;;
    esac
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A RATE CPU
for round in $(seq "$ROUNDS"); do
    for scenario in $SCENARIOS; do
        for system in $SYSTEMS; do
            log "round $round: $scenario through $system"
            read -r rate cpu < <(measure "$system" "$scenario" "$round")
            RATE[$system-$scenario]+="$rate "
            CPU[$system-$scenario]+="$cpu "
        done
    done
done

{
    echo "## TLS passthrough (commit $(git -C "$ROOT" rev-parse --short HEAD), $ROUNDS round(s) of ${DURATION}s)"
    echo
    echo "| scenario | system | rate | proxy CPU per unit |"
    echo "|---|---|---:|---:|"
    for scenario in $SCENARIOS; do
        unit="conn/s"; cpu_unit="µs/conn"
        [[ $scenario == stream ]] && { unit="MiB/s"; cpu_unit="ms/GiB"; }
        for system in $SYSTEMS; do
            r=$(tr ' ' '\n' <<<"${RATE[$system-$scenario]}" | grep . | median)
            c=$(tr ' ' '\n' <<<"${CPU[$system-$scenario]}" | grep . | median)
            [[ $system == direct ]] && c="-"
            echo "| $scenario | $system | $r $unit | $c $( [[ $c == - ]] || echo "$cpu_unit") |"
        done
    done
    echo
    echo "Culvert / HAProxy (median of each):"
    echo
    echo "| scenario | rate ratio | CPU per unit ratio (lower is better) |"
    echo "|---|---:|---:|"
    for scenario in $SCENARIOS; do
        rc=$(tr ' ' '\n' <<<"${RATE[culvert-$scenario]:-}" | grep . | median)
        rh=$(tr ' ' '\n' <<<"${RATE[haproxy-$scenario]:-}" | grep . | median)
        cc=$(tr ' ' '\n' <<<"${CPU[culvert-$scenario]:-}" | grep . | median)
        ch=$(tr ' ' '\n' <<<"${CPU[haproxy-$scenario]:-}" | grep . | median)
        awk -v s="$scenario" -v rc="$rc" -v rh="$rh" -v cc="$cc" -v ch="$ch" \
            'BEGIN { printf "| %s | %.2f | %.2f |\n", s, (rh > 0 ? rc / rh : 0), (ch > 0 ? cc / ch : 0) }'
    done
} | tee "$OUT"
log "raw output in $RUN_DIR"
