#!/usr/bin/env bash
# User-space instructions per request of Culvert, nginx and HAProxy as reverse
# proxies in front of the same loopback nginx backend, counted by valgrind's callgrind (with its
# cache simulation: L1 instruction and data misses per request too).
#
# Why next to run.sh: on a shared 2-vCPU VM, CPU time per request moves by ±15 %
# from run to run; instruction counts do not, so they show what a code change did
# to the proxy's own work. They leave out the kernel (syscalls, TCP), which
# run.sh's CPU figures include. Under valgrind the proxies run ~50x slower, so the
# absolute rates mean nothing; only the per-request counts do.
#
# Scenarios: h1 and h1-close (wrk, CONNS connections, keep-alive or a new connection
# per request), h2c and h2tls (h2load, 4 connections of 16 concurrent streams, HTTP/2
# with prior knowledge or over TLS with ALPN). Counting starts after a 3 s warm-up,
# so one-time work (TLS library seeding, pools filling) is left out.
#
# Not part of the test suite. Needs root to apt-get valgrind, nginx, haproxy, wrk,
# h2load. Binds 127.0.0.1 only (Culvert 18080/18082/18443, HAProxy 18090/18092/18493,
# nginx 18095/18097/18498: HTTP/1.1, h2c, TLS; 19001 backend) and stops what it
# started on exit. nginx runs as one process (`master_process off`) so valgrind sees
# its worker; its config is run.sh's (with its default DEFER_ACCEPT=on).
#
# Knobs: SECONDS_MEASURED=10, CONNS=16 (wrk connections), SKIP_BUILD=1,
# CULVERT_BIN (the culvert binary to count; default the release build's),
# CARGO_TARGET_DIR (default <repo>/target), SCENARIOS="h1 h1-close h2c h2tls".
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
MEASURED=${SECONDS_MEASURED:-10}
CONNS=${CONNS:-16}
SCENARIOS=${SCENARIOS:-h1 h1-close h2c h2tls}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
RUN_DIR=$(mktemp -d /tmp/culvert-instructions.XXXXXX)
PIDS=()

log() { printf '[instructions] %s\n' "$*" >&2; }

# shellcheck source=../lib/process.sh
source "$HERE/../lib/process.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM

install_missing valgrind:valgrind nginx:nginx haproxy:haproxy wrk:wrk h2load:nghttp2-client \
    curl:curl openssl:openssl
require_free_ports 18080 18081 18082 18443 18090 18092 18493 18095 18097 18498 19001 19002
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR nice -n 10 cargo build --release -p culvert --bin culvert)
fi

sed -e "s#@RUN@#$RUN_DIR#g" -e "s#@BACKEND@#127.0.0.1:19001#" -e "s#@BACKEND_H2C@#127.0.0.1:19002#" \
    "$HERE/nginx-backend.conf.in" >"$RUN_DIR/backend.conf"
start_bg backend 0 nginx -c "$RUN_DIR/backend.conf" -p "$RUN_DIR" -e "$RUN_DIR/backend.err"
wait_http http://127.0.0.1:19001/ || { log "backend did not come up"; exit 1; }

make_localhost_cert "$RUN_DIR"
cat "$RUN_DIR/cert.pem" "$RUN_DIR/key.pem" >"$RUN_DIR/haproxy.pem"
render_culvert_config "$HERE/culvert.json.in" "$RUN_DIR/culvert.json" 127.0.0.1:19001 18080 18082 18443 "$RUN_DIR"
sed -e "s#@RUN@#$RUN_DIR#g" -e "s#@BACKEND@#127.0.0.1:19001#" -e "s#@HTTP_PORT@#18095#" \
    -e "s#@H2C_PORT@#18097#" -e "s#@TLS_PORT@#18498#" -e "s#@CERT@#$RUN_DIR/cert.pem#" \
    -e "s#@KEY@#$RUN_DIR/key.pem#" -e "s#@NGINX_TLS_RESUMPTION@##" -e "s#@NGINX_LISTEN@# deferred#" \
    -e "s#^daemon off;#daemon off;\nmaster_process off;#" \
    "$HERE/nginx-proxy.conf.in" >"$RUN_DIR/nginx-proxy.conf"
sed -e "s#@BACKEND@#127.0.0.1:19001#" -e "s#@HTTP_PORT@#18090#" -e "s#@H2C_PORT@#18092#" \
    -e "s#@TLS_PORT@#18493#" -e "s#@PEM@#$RUN_DIR/haproxy.pem#" -e "s#@HAPROXY_TLS_GLOBAL@##" \
    -e "s#@HAPROXY_TLS_BIND@##" -e "s#@HAPROXY_BIND@# defer-accept#" \
    "$HERE/haproxy.cfg.in" >"$RUN_DIR/haproxy.cfg"

load() { # port scenario seconds -> requests completed
    case $2 in
    h1 | h1-close)
        local extra=()
        [[ $2 == h1-close ]] && extra=(-H 'Connection: close')
        taskset -c 0 wrk -t1 "-c$CONNS" "-d$3s" "${extra[@]}" "http://127.0.0.1:$1/" |
            awk '/requests in/ {print $1}'
        ;;
    h2c | h2tls)
        local scheme=http
        [[ $2 == h2tls ]] && scheme=https
        taskset -c 0 h2load -t1 -c4 -m16 -D "$3" "$scheme://127.0.0.1:$1/" |
            awk '/^requests:/ {print $8}'
        ;;
    esac
}

measure() { # name "http h2c tls" ports scenario cmd...
    local name=$1 scenario=$3 http_port h2c_port tls_port port
    read -r http_port h2c_port tls_port <<<"$2"
    case $scenario in
    h2c) port=$h2c_port ;;
    h2tls) port=$tls_port ;;
    *) port=$http_port ;;
    esac
    shift 3
    local out=$RUN_DIR/callgrind.$name.$scenario
    start_bg "$name-$scenario" 1 valgrind --tool=callgrind --cache-sim=yes \
        "--callgrind-out-file=$out" "$@"
    local pid=$STARTED
    wait_http "http://127.0.0.1:$http_port/" 60 || { log "$name did not come up"; exit 1; }
    if [[ $scenario == h2tls ]]; then
        # The first handshake seeds the TLS library's random generator, which under
        # valgrind can outlast a proxy's handshake timeout and stall h2load's clients:
        # done here, one connection at a time, until a request gets through.
        local _
        for _ in $(seq 20); do
            curl -fsk --max-time 120 -o /dev/null "https://127.0.0.1:$tls_port/" && break
        done
    fi
    load "$port" "$scenario" 3 >/dev/null
    callgrind_control -z "$pid" >/dev/null
    local requests
    requests=$(load "$port" "$scenario" "$MEASURED")
    callgrind_control -d "$pid" >/dev/null
    stop_pid "$pid"
    # The dump taken right after the measured run is the first numbered one.
    callgrind_annotate "$out.1" 2>/dev/null | awk -v n="$requests" -v who="$name" -v s="$scenario" '
        /PROGRAM TOTALS/ {
            gsub(",", "")
            printf "| %s | %s | %d | %.0f | %.0f | %.0f | %.0f |\n", s, who, n, $1 / n, $7 / n, $9 / n, $11 / n
        }'
}

echo "| scenario | system | requests | instructions/req | L1i misses/req | L1d read misses/req | L1d write misses/req |"
echo "|---|---|---:|---:|---:|---:|---:|"
for scenario in $SCENARIOS; do
    measure culvert "18080 18082 18443" "$scenario" "${CULVERT_BIN:-$TARGET_DIR/release/culvert}" serve \
        --config "$RUN_DIR/culvert.json" --control 127.0.0.1:18081 --workers 1 \
        --no-access-log --drain-grace 1s
    measure nginx "18095 18097 18498" "$scenario" nginx -c "$RUN_DIR/nginx-proxy.conf" \
        -p "$RUN_DIR" -e "$RUN_DIR/nginx-proxy.error.log"
    measure haproxy "18090 18092 18493" "$scenario" haproxy -db -f "$RUN_DIR/haproxy.cfg"
done
