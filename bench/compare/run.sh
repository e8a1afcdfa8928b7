#!/usr/bin/env bash
# Side-by-side load comparison of Culvert, nginx and HAProxy as reverse proxies in
# front of one loopback backend, plus the backend on its own. Prints a Markdown report.
#
# Not part of the test suite (scripts/test and CI never call it): it needs root for
# apt-get, takes minutes, and its numbers depend on the machine.
#
# Layout (2 cores): the proxy under test is pinned alone to PROXY_CPU; the load
# generator and the backend share LOAD_CPU. Only one proxy runs at a time, all on the
# same ports, with one worker each (Culvert --workers 1, nginx worker_processes 1,
# HAProxy nbthread 1). Everything binds 127.0.0.1 only and is stopped on exit.
#
# Knobs (environment):
#   DURATION=10        seconds of each measured run (a WARMUP run precedes it)
#   WARMUP=2           seconds of the warm-up run before each measured run
#   CONNS=64           wrk connections (HTTP/1.1 scenarios), and the -conn closed loops
#   H2_CONNS=16 H2_STREAMS=16   h2load connections and concurrent streams each
#   IDLE_CONNS=1000    connections held open by the idle-memory scenario
#   BACKEND=nginx      nginx (static 200) or echo (culvert-echo); see bench/README.md
#   BACKEND_FIFO=off   on: the backend runs SCHED_FIFO (chrt -f 1), so it runs as soon
#                      as a request reaches it instead of waiting for the load
#                      generator's time slice on the core they share; see
#                      bench/README.md ("Current results") on what that wait does to h1-close
#   TLS_RESUMPTION=on  on: every server's default (all three resume sessions, and wrk
#                      resumes its session on each new connection); off: nginx and
#                      HAProxy refuse resumption (Culvert cannot be told to), for
#                      looking at nginx/HAProxy alone. https-full never resumes either way.
#   DEFER_ACCEPT=on    on: nginx listens with `deferred` and HAProxy binds with
#                      `defer-accept`, the TCP_DEFER_ACCEPT that Culvert's listeners
#                      always set on Linux; off: their defaults (accept on the handshake)
#   SYSTEMS="direct culvert nginx haproxy"
#   SCENARIOS="h1 h1-close h1-close-conn https https-close https-close-conn https-full
#              h2c h2tls h1-close-open https-close-open idle"
#   OPEN_RATES_PLAIN="5000 10000"      h1-close-open: connections started per second
#   OPEN_RATES_TLS="1000 2000 3000"    https-close-open: the same over TLS (resumed)
#                      The -open scenarios are open loop (culvert-load): connections
#                      start on a fixed schedule whatever the answers do, so every
#                      system gets the same load and the latencies compare at it; each
#                      rate is its own row (e.g. https-close-open@2000). Latency there
#                      runs from connect to the response's last byte.
#                      The -conn scenarios are wrk's closed loop (CONNS connections,
#                      each followed by the next) run by culvert-load, so that their
#                      latency also runs from connect to last byte: wrk's clock starts
#                      only after the connect and the TLS handshake.
#   FULL_PROCS=8       parallel `openssl s_time -new` clients for https-full
#   PROXY_CPU=1 LOAD_CPU=0 BACKEND_CPU=$LOAD_CPU
#   ROUNDS=1           repeat every load run this many times; the report shows the
#                      median of each column (3 or more recommended on a shared VM)
#   SKIP_BUILD=1       use the binaries already in $CARGO_TARGET_DIR/release
#   CULVERT_BIN        the culvert binary to measure (default $CARGO_TARGET_DIR/release/culvert;
#                      scripts/build-pgo prints the path of a profile-guided build)
#   CARGO_TARGET_DIR   default <repo>/target
#   OUT                where the Markdown report is also written (default in the run dir)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CONNS=${CONNS:-64}
H2_CONNS=${H2_CONNS:-16}
H2_STREAMS=${H2_STREAMS:-16}
IDLE_CONNS=${IDLE_CONNS:-1000}
BACKEND=${BACKEND:-nginx}
BACKEND_FIFO=${BACKEND_FIFO:-off}
TLS_RESUMPTION=${TLS_RESUMPTION:-on}
DEFER_ACCEPT=${DEFER_ACCEPT:-on}
SYSTEMS=${SYSTEMS:-direct culvert nginx haproxy}
SCENARIOS=${SCENARIOS:-h1 h1-close h1-close-conn https https-close https-close-conn https-full h2c h2tls h1-close-open https-close-open idle}
OPEN_RATES_PLAIN=${OPEN_RATES_PLAIN:-5000 10000}
OPEN_RATES_TLS=${OPEN_RATES_TLS:-1000 2000 3000}
FULL_PROCS=${FULL_PROCS:-8}
ROUNDS=${ROUNDS:-1}
ROUND=1
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
BACKEND_CPU=${BACKEND_CPU:-$LOAD_CPU}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

# Fixed loopback ports, away from the demo's 8080/8081/9001 so a demo can keep running.
BACKEND_PORT=19001
BACKEND_H2C_PORT=19002
HTTP_PORT=18080
H2C_PORT=18082
TLS_PORT=18443
CONTROL_PORT=18081

RUN_DIR=$(mktemp -d /tmp/culvert-compare.XXXXXX)
OUT=${OUT:-$RUN_DIR/results.md}
RESULTS=$RUN_DIR/results.tsv
CLK_TCK=$(getconf CLK_TCK)
PIDS=()
MISSING=()

log() { printf '[compare] %s\n' "$*" >&2; }

# shellcheck source=../lib/process.sh
source "$HERE/../lib/process.sh"

trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- tools and build

# Installs the Debian packages that provide missing tools; refreshes the package
# lists only when a first install fails, as they are usually current enough.
install_tools() {
    local cmd
    install_missing nginx:nginx haproxy:haproxy wrk:wrk h2load:nghttp2-client \
        openssl:openssl python3:python3 curl:curl taskset:util-linux
    # The Debian packages enable services; never leave a system nginx/HAProxy on
    # ports we did not ask for. (policy-rc.d usually keeps them from starting.)
    for cmd in nginx haproxy wrk h2load openssl python3 curl taskset; do
        command -v "$cmd" >/dev/null 2>&1 || MISSING+=("$cmd")
    done
    for cmd in openssl curl taskset; do
        if [[ " ${MISSING[*]} " == *" $cmd "* ]]; then
            log "$cmd is required and could not be installed"
            exit 1
        fi
    done
}

have() { [[ " ${MISSING[*]} " != *" $1 "* ]]; }

# The load runs SCENARIOS asks for, in order: each open-loop scenario once per rate.
load_scenarios() {
    local scenario rate
    for scenario in $SCENARIOS; do
        case $scenario in
        idle) ;;
        h1-close-open) for rate in $OPEN_RATES_PLAIN; do echo "h1-close-open@$rate"; done ;;
        https-close-open) for rate in $OPEN_RATES_TLS; do echo "https-close-open@$rate"; done ;;
        *) echo "$scenario" ;;
        esac
    done
}

# Whether a system can run here (Culvert is built, the others are installed tools).
runnable() { [[ $1 == direct || $1 == culvert ]] || have "$1"; }

# Replaces the rows of repeated load runs in $RESULTS by one row per system and
# scenario holding the median of each column (errors: the largest). Rows that are
# not measurements (not run, failed, idle memory) are kept as they are.
medians() {
    awk -F'\t' -v OFS='\t' '
        function median(list,    n, a, i, j, t) {
            n = split(list, a, " ")
            if (a[1] !~ /^[0-9.]+$/) return a[1]
            for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        BEGIN { split("- - %.1f %.3f %.3f %.1f %.0f %.1f", format, " ") }
        NF != 9 { print; next }
        {
            key = $1 OFS $2
            if (!(key in count)) order[++keys] = key
            count[key]++
            for (c = 3; c <= 8; c++) values[key, c] = values[key, c] " " $c
            if (!(key in worst) || $9 + 0 > worst[key] + 0) worst[key] = $9
        }
        END {
            for (k = 1; k <= keys; k++) {
                key = order[k]
                line = key
                for (c = 3; c <= 8; c++) {
                    v = median(values[key, c])
                    line = line OFS (v ~ /^[0-9.]+$/ ? sprintf(format[c], v) : v)
                }
                print line, worst[key]
            }
        }' "$RESULTS" >"$RESULTS.median"
    mv "$RESULTS" "$RESULTS.all"
    mv "$RESULTS.median" "$RESULTS"
}

build() {
    if [[ ${SKIP_BUILD:-0} != 1 ]]; then
        log "building culvert and culvert-echo (release) into $TARGET_DIR"
        (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR nice -n 10 \
            cargo build --release -p culvert -p culvert-bench --bins)
    fi
    CULVERT=${CULVERT_BIN:-$TARGET_DIR/release/culvert}
    ECHO=$TARGET_DIR/release/culvert-echo
    LOAD=$TARGET_DIR/release/culvert-load
    [[ -x $CULVERT && -x $ECHO && -x $LOAD ]] || {
        log "missing $CULVERT, $ECHO or $LOAD"
        exit 1
    }
}

# ---------------------------------------------------------------- helpers

# A self-signed ECDSA P-256 certificate, the kind most edge deployments serve now.
make_cert() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -days 2 -subj /CN=bench.localhost \
        -addext 'subjectAltName=DNS:bench.localhost,DNS:localhost,IP:127.0.0.1' \
        -keyout "$RUN_DIR/key.pem" -out "$RUN_DIR/cert.pem" >/dev/null 2>&1
    cat "$RUN_DIR/cert.pem" "$RUN_DIR/key.pem" >"$RUN_DIR/haproxy.pem"
}

render() { # template output
    local nginx_tls haproxy_global haproxy_bind
    if [[ $TLS_RESUMPTION == off ]]; then
        nginx_tls='        ssl_session_cache off;
        ssl_session_tickets off;'
        haproxy_global='    tune.ssl.cachesize 0'
        haproxy_bind='no-tls-tickets'
    else
        nginx_tls='' haproxy_global='' haproxy_bind=''
    fi
    local nginx_listen='' haproxy_listen=''
    if [[ $DEFER_ACCEPT == on ]]; then
        nginx_listen=' deferred' haproxy_listen=' defer-accept'
    fi
    local text
    text=$(<"$1")
    text=${text//@RUN@/$RUN_DIR}
    text=${text//@BACKEND@/127.0.0.1:$BACKEND_PORT}
    text=${text//@BACKEND_H2C@/127.0.0.1:$BACKEND_H2C_PORT}
    text=${text//@HTTP_PORT@/$HTTP_PORT}
    text=${text//@H2C_PORT@/$H2C_PORT}
    text=${text//@TLS_PORT@/$TLS_PORT}
    text=${text//@CERT@/$RUN_DIR/cert.pem}
    text=${text//@KEY@/$RUN_DIR/key.pem}
    text=${text//@PEM@/$RUN_DIR/haproxy.pem}
    text=${text//@NGINX_TLS_RESUMPTION@/$nginx_tls}
    text=${text//@HAPROXY_TLS_GLOBAL@/$haproxy_global}
    text=${text//@HAPROXY_TLS_BIND@/$haproxy_bind}
    text=${text//@NGINX_LISTEN@/$nginx_listen}
    text=${text//@HAPROXY_BIND@/$haproxy_listen}
    printf '%s\n' "$text" >"$2"
}


# ---------------------------------------------------------------- processes

start_backend() {
    local priority=()
    [[ $BACKEND_FIFO == on ]] && priority=(chrt -f 1)
    if [[ $BACKEND == nginx ]]; then
        render "$HERE/nginx-backend.conf.in" "$RUN_DIR/nginx-backend.conf"
        start_bg backend "$BACKEND_CPU" "${priority[@]}" nginx -c "$RUN_DIR/nginx-backend.conf" -p "$RUN_DIR" \
            -e "$RUN_DIR/nginx-backend.error.log"
    else
        start_bg backend "$BACKEND_CPU" "${priority[@]}" "$ECHO" --listen "127.0.0.1:$BACKEND_PORT" --protocol auto
    fi
    BACKEND_PID=$STARTED
    wait_http "http://127.0.0.1:$BACKEND_PORT/" || {
        log "backend did not come up"
        cat "$RUN_DIR/backend.out" >&2
        exit 1
    }
}

start_proxy() { # system; sets PROXY_PID
    local system=$1
    case $system in
    culvert)
        render "$HERE/culvert.json.in" "$RUN_DIR/culvert.json"
        start_bg culvert "$PROXY_CPU" "$CULVERT" serve --config "$RUN_DIR/culvert.json" \
            --control "127.0.0.1:$CONTROL_PORT" --workers 1 --no-access-log --drain-grace 1s
        ;;
    nginx)
        render "$HERE/nginx-proxy.conf.in" "$RUN_DIR/nginx-proxy.conf"
        start_bg nginx "$PROXY_CPU" nginx -c "$RUN_DIR/nginx-proxy.conf" -p "$RUN_DIR" \
            -e "$RUN_DIR/nginx-proxy.error.log"
        ;;
    haproxy)
        render "$HERE/haproxy.cfg.in" "$RUN_DIR/haproxy.cfg"
        start_bg haproxy "$PROXY_CPU" haproxy -db -f "$RUN_DIR/haproxy.cfg"
        ;;
    esac
    PROXY_PID=$STARTED
    if ! wait_http "http://127.0.0.1:$HTTP_PORT/" || ! wait_http "https://127.0.0.1:$TLS_PORT/"; then
        log "$system did not come up"
        cat "$RUN_DIR/$system.out" >&2
        exit 1
    fi
}

stop_proxy() {
    stop_pid "$PROXY_PID"
    # Let TIME_WAIT and the kernel settle so the next system starts from the same place.
    sleep 1
}

# ---------------------------------------------------------------- load runs

# Runs the tool for the scenario (warm-up, then the measured run) and appends a row
# to $RESULTS: system scenario req/s p50_ms p99_ms proxy_us/req proxy_cpu% backend_us/req errors
measure() { # system scenario proxy_pid
    local system=$1 scenario=$2 ppid=$3 scheme=http port=$HTTP_PORT tool=wrk
    local extra=() url out="$RUN_DIR/$system-$scenario-$ROUND.txt"
    case $scenario in
    h1) ;;
    h1-close) extra=(-H 'Connection: close') ;;
    https) scheme=https port=$TLS_PORT ;;
    https-close) scheme=https port=$TLS_PORT extra=(-H 'Connection: close') ;;
    h2c) tool=h2load port=$H2C_PORT ;;
    h2tls) tool=h2load scheme=https port=$TLS_PORT ;;
    https-full) tool=openssl scheme=https port=$TLS_PORT ;;
    h1-close-open@* | h1-close-conn) tool=culvert-load ;;
    https-close-open@* | https-close-conn) tool=culvert-load scheme=https port=$TLS_PORT ;;
    esac
    if [[ $system == direct ]]; then
        port=$BACKEND_PORT
        if [[ $scenario == h2c ]]; then port=$(direct_h2c_port); fi
    fi
    url="$scheme://127.0.0.1:$port/"
    if [[ $tool != culvert-load ]] && ! have "$tool"; then
        printf '%s\t%s\tnot run: %s missing\n' "$system" "$scenario" "$tool" >>"$RESULTS"
        return
    fi

    local c0 c1 b0 b1 requests="" rps p50 p99 errors
    if [[ $tool == culvert-load ]]; then
        local pace=(--connections "$CONNS") result
        if [[ $scenario == *@* ]]; then pace=(--rate "${scenario##*@}"); fi
        taskset -c "$LOAD_CPU" "$LOAD" --url "$url" "${pace[@]}" --duration "$WARMUP" --warmup 0 >/dev/null 2>&1 || true
        c0=$(cpu_ticks "$ppid") b0=$(cpu_ticks "$BACKEND_PID")
        taskset -c "$LOAD_CPU" "$LOAD" --url "$url" "${pace[@]}" --duration "$DURATION" --warmup 0 >"$out" 2>&1 || true
        c1=$(cpu_ticks "$ppid") b1=$(cpu_ticks "$BACKEND_PID")
        result=$(awk '$1 == "result"' "$out")
        if [[ -n $result ]]; then
            requests=$(result_field ok "$result") p50=$(result_field p50_ms "$result")
            p99=$(result_field p99_ms "$result")
            errors=$(($(result_field failed "$result") + $(result_field bad_status "$result") +
                $(result_field skipped "$result")))
            rps=$(awk -v n="$requests" -v d="$DURATION" 'BEGIN { printf "%.1f", n / d }')
        fi
    elif [[ $tool == openssl ]]; then
        # wrk and h2load keep their TLS session across reconnects, so a new connection
        # is an abbreviated handshake; `s_time -new` never offers a session, so every
        # connection is a full handshake. Each s_time is one connection at a time
        # (TLS handshake, `GET / HTTP/1.0`, close); FULL_PROCS of them run in parallel.
        # It reports no latency distribution, only counts (mean latency = time/count).
        local i full_pids=()
        taskset -c "$LOAD_CPU" openssl s_time -connect "127.0.0.1:$port" -new -time "$WARMUP" -www / >/dev/null 2>&1 || true
        c0=$(cpu_ticks "$ppid") b0=$(cpu_ticks "$BACKEND_PID")
        for ((i = 1; i <= FULL_PROCS; i++)); do
            taskset -c "$LOAD_CPU" openssl s_time -connect "127.0.0.1:$port" -new -time "$DURATION" \
                -www / >"$out.$i" 2>&1 &
            full_pids+=("$!")
        done
        for i in "${full_pids[@]}"; do wait "$i" || true; done
        c1=$(cpu_ticks "$ppid") b1=$(cpu_ticks "$BACKEND_PID")
        cat "$out".* >"$out"
        # "N connections in T real seconds, B bytes read per connection"
        read -r requests p50 errors < <(awk '
            / connections in .* real seconds/ {
                n += $1; k++
                if ($1 > 0) lat += $4 / $1
                if ($1 == 0 || $7 + 0 < 100) bad++   # no HTTP answer read
            }
            END { printf "%d %.3f %d\n", n, (k ? lat / k * 1000 : 0), bad }' "$out")
        rps=$(awk -v n="$requests" -v d="$DURATION" 'BEGIN { printf "%.1f", n / d }')
        p99=n/a
    elif [[ $tool == wrk ]]; then
        taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"${WARMUP}s" "${extra[@]}" "$url" >/dev/null 2>&1 || true
        c0=$(cpu_ticks "$ppid") b0=$(cpu_ticks "$BACKEND_PID")
        taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency "${extra[@]}" "$url" >"$out" 2>&1
        c1=$(cpu_ticks "$ppid") b1=$(cpu_ticks "$BACKEND_PID")
        requests=$(awk '/ requests in / {print $1}' "$out")
        rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
        p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$out")")
        p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$out")")
        errors=$(awk '
            /Socket errors:/ { gsub(",", ""); e += $4 + $6 + $8 + $10 }
            /Non-2xx or 3xx responses:/ { e += $NF }
            END { print e + 0 }' "$out")
    else
        local log_file="$RUN_DIR/$system-$scenario.h2load.log"
        taskset -c "$LOAD_CPU" h2load -t1 -c"$H2_CONNS" -m"$H2_STREAMS" -D "$WARMUP" "$url" >/dev/null 2>&1 || true
        c0=$(cpu_ticks "$ppid") b0=$(cpu_ticks "$BACKEND_PID")
        taskset -c "$LOAD_CPU" h2load -t1 -c"$H2_CONNS" -m"$H2_STREAMS" -D "$DURATION" \
            --log-file="$log_file" "$url" >"$out" 2>&1
        c1=$(cpu_ticks "$ppid") b1=$(cpu_ticks "$BACKEND_PID")
        requests=$(awk '/^requests:/ {print $6}' "$out")
        rps=$(awk '/^finished in/ {print $4}' "$out")
        # h2load prints no percentiles; its per-request log has the elapsed time in
        # microseconds in column 3.
        read -r p50 p99 < <(cut -f3 "$log_file" | sort -n | awk '
            { v[NR] = $1 }
            END { if (NR == 0) { print "nan nan"; exit }
                  i50 = int(NR * 0.50); if (i50 < 1) i50 = 1
                  i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
                  printf "%.3f %.3f\n", v[i50] / 1000, v[i99] / 1000 }')
        # failed/errored/timeout streams plus 4xx/5xx answers.
        errors=$(awk '
            /^requests:/ { e += $10 + $12 + $14 }
            /^status codes:/ { e += $7 + $9 }
            END { print e + 0 }' "$out")
    fi
    if [[ -z $requests || $requests == 0 ]]; then
        printf '%s\t%s\tfailed: no requests completed (see %s)\n' "$system" "$scenario" "$out" >>"$RESULTS"
        return
    fi
    local proxy_us proxy_pct backend_us
    proxy_us=$(awk -v d=$((c1 - c0)) -v t="$CLK_TCK" -v n="$requests" 'BEGIN { printf "%.1f", d / t * 1e6 / n }')
    proxy_pct=$(awk -v d=$((c1 - c0)) -v t="$CLK_TCK" -v s="$DURATION" 'BEGIN { printf "%.0f", d / t / s * 100 }')
    backend_us=$(awk -v d=$((b1 - b0)) -v t="$CLK_TCK" -v n="$requests" 'BEGIN { printf "%.1f", d / t * 1e6 / n }')
    if [[ $system == direct ]]; then proxy_us=- proxy_pct=-; fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$system" "$scenario" "$rps" "$p50" "$p99" \
        "$proxy_us" "$proxy_pct" "$backend_us" "$errors" >>"$RESULTS"
    log "$system $scenario: $rps req/s, p50 ${p50}ms p99 ${p99}ms, ${proxy_us}us/req, errors $errors"
}

# The value of `key` in culvert-load's `result key=value ...` line.
result_field() { # key line
    sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"
}

direct_h2c_port() {
    # culvert-echo --protocol auto speaks h2c on its one port; the nginx backend needs
    # a second, h2c-only port (nginx 1.22 cannot mix them).
    if [[ $BACKEND == nginx ]]; then echo "$BACKEND_H2C_PORT"; else echo "$BACKEND_PORT"; fi
}

# Opens IDLE_CONNS connections (one request each, then idle) against a freshly
# started proxy and records its RSS growth per connection.
measure_idle() { # system plain|tls
    local system=$1 mode=$2 port=$HTTP_PORT scheme=http
    if [[ $mode == tls ]]; then port=$TLS_PORT scheme=https; fi
    if ! have python3; then
        printf '%s\tidle-%s\tnot run: python3 missing\n' "$system" "$mode" >>"$RESULTS"
        return
    fi
    start_proxy "$system"
    # A few requests first so lazily built state (TLS config, upstream pool) is in
    # the baseline rather than charged to the idle connections.
    local _
    for _ in 1 2 3; do curl -fsk -o /dev/null "$scheme://127.0.0.1:$port/" || true; done
    sleep 1
    local before after ready="$RUN_DIR/idle-$system-$mode.ready" holder
    before=$(rss_kib "$PROXY_PID")
    rm -f "$ready"
    start_bg "idle-$system-$mode" "$LOAD_CPU" python3 "$HERE/idle_conns.py" 127.0.0.1 "$port" \
        "$IDLE_CONNS" "$mode" "$ready" 120
    holder=$STARTED
    for _ in $(seq 600); do
        [[ -s $ready ]] && break
        sleep 0.1
    done
    sleep 2
    after=$(rss_kib "$PROXY_PID")
    local opened failed
    read -r _ opened failed <"$ready" || { opened=0 failed=$IDLE_CONNS; }
    stop_pid "$holder"
    stop_proxy
    if ((opened == 0)); then
        printf '%s\tidle-%s\tfailed: no connection opened\n' "$system" "$mode" >>"$RESULTS"
        return
    fi
    printf '%s\tidle-%s\t%s\t%s\t%s\t%s\n' "$system" "$mode" "$before" "$after" "$opened" "$failed" >>"$RESULTS"
    log "$system idle-$mode: RSS ${before} -> ${after} KiB over $opened connections ($failed failed)"
}

# ---------------------------------------------------------------- report

report() {
    local scenario system title
    echo "# Culvert vs nginx vs HAProxy ($(date -u +%Y-%m-%dT%H:%MZ))"
    echo
    echo "- machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), kernel $(uname -r)"
    echo "- proxy on CPU $PROXY_CPU; load generator on CPU $LOAD_CPU; backend ($BACKEND) on CPU $BACKEND_CPU, SCHED_FIFO: $BACKEND_FIFO"
    echo "- runs: $ROUNDS round(s), systems interleaved per scenario, medians reported; ${DURATION}s measured after ${WARMUP}s warm-up; wrk -t1 -c$CONNS; h2load -t1 -c$H2_CONNS -m$H2_STREAMS; TLS resumption on nginx/HAProxy: $TLS_RESUMPTION; deferred accept on nginx/HAProxy: $DEFER_ACCEPT"
    echo "- load average (other work on the machine) at start: $LOAD_START; at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- culvert binary: $CULVERT"
    echo "- versions: culvert $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD -- proxy router 2>/dev/null || echo '+dirty'), $(nginx -v 2>&1 | sed 's/^nginx version: //'), $(haproxy -v 2>/dev/null | awk 'NR == 1 {print "HAProxy " $3}'), $(wrk -v 2>&1 | awk 'NR == 1 {print "wrk " $2}'), $(h2load --version 2>/dev/null | awk '{print $2}')"
    echo
    for scenario in $(load_scenarios); do
        case $scenario in
        h1) title="HTTP/1.1 keep-alive (wrk)" ;;
        h1-close) title="HTTP/1.1, new connection per request (wrk, Connection: close; wrk's latency starts after the connect)" ;;
        h1-close-conn) title="HTTP/1.1, new connection per request, closed loop of $CONNS connections (culvert-load; latency from connect to last byte)" ;;
        https) title="HTTPS keep-alive (wrk, HTTP/1.1 over TLS)" ;;
        https-close) title="HTTPS, new TLS connection per request, session resumed (wrk, Connection: close; wrk's latency starts after the TLS handshake)" ;;
        https-close-conn) title="HTTPS, new TLS connection per request, session resumed, closed loop of $CONNS connections (culvert-load; latency from connect to last byte)" ;;
        https-full) title="HTTPS, full TLS handshake per request (openssl s_time -new x$FULL_PROCS; p50 column = mean)" ;;
        h2c) title="h2c, prior knowledge (h2load)" ;;
        h2tls) title="HTTP/2 over TLS (h2load, ALPN h2)" ;;
        h1-close-open@*) title="HTTP/1.1, new connection per request, open loop at ${scenario##*@} connections/s (culvert-load; latency from connect to last byte)" ;;
        https-close-open@*) title="HTTPS, new TLS connection per request, session resumed, open loop at ${scenario##*@} connections/s (culvert-load; latency from connect to last byte)" ;;
        esac
        echo "## $title"
        echo
        echo "| system | req/s | p50 ms | p99 ms | proxy CPU µs/req | proxy CPU % | backend CPU µs/req | errors |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|"
        for system in $SYSTEMS; do
            awk -F'\t' -v s="$system" -v c="$scenario" '
                $1 == s && $2 == c {
                    if (NF == 3) printf "| %s | %s | | | | | | |\n", s, $3
                    else printf "| %s | %.0f | %s | %s | %s | %s | %s | %s |\n", s, $3, $4, $5, $6, $7, $8, $9
                }' "$RESULTS"
        done
        echo
    done
    if [[ " $SCENARIOS " == *" idle "* ]]; then
        echo "## Memory per idle connection (RSS growth / connections, one request each then idle)"
        echo
        echo "| system | mode | RSS before KiB | RSS after KiB | connections | failed | bytes/conn |"
        echo "|---|---|---:|---:|---:|---:|---:|"
        for system in $SYSTEMS; do
            [[ $system == direct ]] && continue
            for mode in plain tls; do
                awk -F'\t' -v s="$system" -v c="idle-$mode" -v m="$mode" '
                    $1 == s && $2 == c {
                        if (NF == 3) printf "| %s | %s | %s | | | | |\n", s, m, $3
                        else printf "| %s | %s | %s | %s | %s | %s | %.0f |\n", s, m, $3, $4, $5, $6, ($4 - $3) * 1024 / $5
                    }' "$RESULTS"
            done
        done
        echo
    fi
    echo "## Culvert relative to nginx and HAProxy"
    echo
    echo "Culvert's value divided by the peer's: req/s > 1 means Culvert served more; CPU/req, p99 and memory < 1 mean Culvert used or took less."
    echo
    echo "| scenario | req/s vs nginx | req/s vs HAProxy | CPU/req vs nginx | CPU/req vs HAProxy | p99 vs nginx | p99 vs HAProxy |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    awk -F'\t' '
        function r(a, b) { return (a == "" || b == "" || a == "-" || a == "n/a" || b == "n/a" || b + 0 == 0) ? "n/a" : sprintf("%.2f", a / b) }
        NF == 9 { rps[$1, $2] = $3; cpu[$1, $2] = $6; p99[$1, $2] = $5; if (!(($2) in seen)) { seen[$2] = 1; order[++n] = $2 } }
        NF == 6 { mem[$1, $2] = ($4 - $3) / $5; if (!(($2) in mseen)) { mseen[$2] = 1; morder[++m] = $2 } }
        END {
            for (i = 1; i <= n; i++) {
                c = order[i]
                printf "| %s | %s | %s | %s | %s | %s | %s |\n", c, r(rps["culvert", c], rps["nginx", c]), r(rps["culvert", c], rps["haproxy", c]), r(cpu["culvert", c], cpu["nginx", c]), r(cpu["culvert", c], cpu["haproxy", c]), r(p99["culvert", c], p99["nginx", c]), r(p99["culvert", c], p99["haproxy", c])
            }
            if (m) {
                print ""
                print "| idle memory | bytes/conn vs nginx | bytes/conn vs HAProxy |"
                print "|---|---:|---:|"
                for (i = 1; i <= m; i++) {
                    c = morder[i]
                    printf "| %s | %s | %s |\n", c, r(mem["culvert", c], mem["nginx", c]), r(mem["culvert", c], mem["haproxy", c])
                }
            }
        }' "$RESULTS"
    echo
    paired_ratios
    echo "Raw tool output and logs: $RUN_DIR"
}

# With several rounds: Culvert's CPU/req and p99 against each peer in the same round
# (the three run back to back, so they share what else the machine was doing), the
# median over the rounds, and the lowest and highest round. On a shared VM whose
# speed drifts between rounds this pairs like with like, where a ratio of column
# medians can pair a slow round of one system with a fast round of another.
paired_ratios() {
    ((ROUNDS > 1)) && [[ -f $RESULTS.all ]] || return 0
    echo "Per-round ratios: in each round Culvert's value over the peer's from the same round; the median over $ROUNDS rounds, with the lowest and highest round in brackets."
    echo
    echo "| scenario | CPU/req vs nginx | CPU/req vs HAProxy | p99 vs nginx | p99 vs HAProxy |"
    echo "|---|---:|---:|---:|---:|"
    awk -F'\t' '
        function median(list,    n, a, i, j, t) {
            n = split(list, a, " ")
            for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
            lo = a[1]; hi = a[n]
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        function cell(list) {
            if (list == "") return "n/a"
            m = median(list)
            return sprintf("%.2f (%.2f-%.2f)", m, lo, hi)
        }
        NF == 9 {
            round = ++seen[$1, $2]
            cpu[$1, $2, round] = $6; p99[$1, $2, round] = $5
            if (!(($2) in order_seen)) { order_seen[$2] = 1; order[++n] = $2 }
            if (round > rounds) rounds = round
        }
        function ratios(metric_cpu, peer, c,    k, list, a, b) {
            list = ""
            for (k = 1; k <= rounds; k++) {
                a = metric_cpu ? cpu["culvert", c, k] : p99["culvert", c, k]
                b = metric_cpu ? cpu[peer, c, k] : p99[peer, c, k]
                if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b + 0 > 0) list = list " " a / b
            }
            return list
        }
        END {
            for (i = 1; i <= n; i++) {
                c = order[i]
                printf "| %s | %s | %s | %s | %s |\n", c, cell(ratios(1, "nginx", c)), cell(ratios(1, "haproxy", c)), cell(ratios(0, "nginx", c)), cell(ratios(0, "haproxy", c))
            }
        }' "$RESULTS.all"
    echo
}

# ---------------------------------------------------------------- main

main() {
    # 1,000+ idle connections and a proxy per test need more than the usual 1024 fds;
    # take what the hard limit allows.
    ulimit -n "$(ulimit -Hn)"
    install_tools
    build
    require_free_ports $BACKEND_PORT $BACKEND_H2C_PORT $HTTP_PORT $H2C_PORT $TLS_PORT $CONTROL_PORT
    make_cert
    : >"$RESULTS"
    LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
    start_backend
    log "backend: $BACKEND (pid $BACKEND_PID), results in $RUN_DIR"

    # Load runs interleave the systems scenario by scenario (a proxy is started for
    # each run), so drift in what else the machine does spreads over all of them
    # instead of landing on whichever system ran last.
    local system scenario
    for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
        for scenario in $(load_scenarios); do
            for system in $SYSTEMS; do
                if ! runnable "$system"; then
                    ((ROUND == 1)) && printf '%s\t%s\tnot run: %s missing\n' "$system" "$scenario" "$system" >>"$RESULTS"
                    continue
                fi
                # The backend speaks no TLS, so "direct" has no TLS rows.
                [[ $system == direct && ($scenario == https* || $scenario == h2tls) ]] && continue
                if [[ $system == direct ]]; then
                    measure "$system" "$scenario" "$BACKEND_PID"
                else
                    start_proxy "$system"
                    measure "$system" "$scenario" "$PROXY_PID"
                    stop_proxy
                fi
            done
        done
    done
    ROUND=1
    if [[ " $SCENARIOS " == *" idle "* ]]; then
        for system in $SYSTEMS; do
            [[ $system == direct ]] || ! runnable "$system" && continue
            measure_idle "$system" plain
            measure_idle "$system" tls
        done
    fi
    medians
    report | tee "$OUT"
}

main "$@"
