#!/usr/bin/env bash
# Hot-swap under load: drives Culvert with wrk/h2load while pushing RATE configs per
# second through PUT /config, alternating two valid documents (config-a: header
# x-bench-config=a, backend A; config-b: header b, backend B and one more route) with
# increasing versions. Reports failed requests (non-2xx answers, socket errors,
# failed/errored streams) and pushes accepted/refused. The target is 0 failed.
#
# Not part of the test suite (scripts/test and CI never call it).
#
# Knobs (environment):
#   DURATION=25        seconds of load per phase (and of pushing)
#   RATE=10            config pushes per second
#   PHASES="h1 h1-close h2c"   wrk keep-alive, wrk new connection per request, h2load h2c
#   CONNS=64 H2_CONNS=16 H2_STREAMS=16
#   WORKERS=2          Culvert --workers (more than one makes every worker reconcile)
#   SKIP_BUILD=1       use the binaries already in $CARGO_TARGET_DIR/release
#   CULVERT_BIN        the culvert binary to run (default $CARGO_TARGET_DIR/release/culvert)
#   CARGO_TARGET_DIR   default <repo>/target
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

DURATION=${DURATION:-25}
RATE=${RATE:-10}
PHASES=${PHASES:-h1 h1-close h2c}
CONNS=${CONNS:-64}
H2_CONNS=${H2_CONNS:-16}
H2_STREAMS=${H2_STREAMS:-16}
WORKERS=${WORKERS:-2}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

# Loopback ports of their own, so this can run beside bench/compare or the demo.
HTTP_PORT=18090
CONTROL_PORT=18091
BACKEND_A_PORT=19011
BACKEND_B_PORT=19012
URL=http://127.0.0.1:$HTTP_PORT/
CONTROL=http://127.0.0.1:$CONTROL_PORT

RUN_DIR=$(mktemp -d /tmp/culvert-hotswap.XXXXXX)
PIDS=()

log() { printf '[hotswap] %s\n' "$*" >&2; }

# shellcheck source=../lib/process.sh
source "$HERE/../lib/process.sh"

trap cleanup EXIT
trap 'exit 130' INT TERM

install_tools() {
    install_missing wrk:wrk h2load:nghttp2-client curl:curl
}

render() { # template version
    local text
    text=$(<"$1")
    text=${text//@VERSION@/$2}
    text=${text//@HTTP_PORT@/$HTTP_PORT}
    text=${text//@BACKEND_A@/127.0.0.1:$BACKEND_A_PORT}
    text=${text//@BACKEND_B@/127.0.0.1:$BACKEND_B_PORT}
    printf '%s\n' "$text"
}

# Pushes RATE configs per second from version $1 until the deadline (epoch seconds
# $2), on a fixed schedule so a slow answer does not lower the rate for long. One
# line per push: version, HTTP status (000 = no answer), seconds taken.
pusher() { # first_version deadline
    local version=$1 deadline=$2 start=$EPOCHREALTIME i=0 template code next now
    while :; do
        now=$EPOCHREALTIME
        if awk -v n="$now" -v d="$deadline" 'BEGIN { exit !(n >= d) }'; then break; fi
        if ((version % 2)); then template=$HERE/config-a.json.in; else template=$HERE/config-b.json.in; fi
        code=$(render "$template" "$version" | curl -s -o /dev/null -w '%{http_code} %{time_total}' \
            --max-time 5 -X PUT -H 'Content-Type: application/json' --data-binary @- \
            "$CONTROL/config" || true)
        printf '%s %s\n' "$version" "${code:-000 0}"
        version=$((version + 1)) i=$((i + 1))
        next=$(awk -v s="$start" -v i="$i" -v r="$RATE" -v n="$EPOCHREALTIME" \
            'BEGIN { w = s + i / r - n; printf "%.3f", (w > 0 ? w : 0) }')
        sleep "$next"
    done
}

# Samples which config answers, twice a second, to show the swaps are live.
sampler() { # deadline
    local deadline=$1
    while awk -v n="$EPOCHREALTIME" -v d="$deadline" 'BEGIN { exit !(n < d) }'; do
        curl -s -o /dev/null -D - --max-time 2 "$URL" | tr -d '\r' |
            awk -F': ' 'tolower($1) == "x-bench-config" {print $2}' || true
        sleep 0.5
    done
}

run_phase() { # phase first_version; appends one Markdown row to rows.md, sets NEXT_VERSION
    local phase=$1 version=$2
    local out=$RUN_DIR/load-$phase.txt
    local deadline pusher_pid sampler_pid load_rc=0
    deadline=$(awk -v n="$EPOCHREALTIME" -v d="$DURATION" 'BEGIN { printf "%.3f", n + d }')
    pusher "$version" "$deadline" >"$RUN_DIR/pushes-$phase.log" &
    pusher_pid=$!
    PIDS+=("$pusher_pid")
    sampler "$deadline" >"$RUN_DIR/samples-$phase.log" &
    sampler_pid=$!
    PIDS+=("$sampler_pid")
    case $phase in
    h1) wrk -t1 -c"$CONNS" -d"${DURATION}s" "$URL" >"$out" 2>&1 || load_rc=$? ;;
    h1-close) wrk -t1 -c"$CONNS" -d"${DURATION}s" -H 'Connection: close' "$URL" >"$out" 2>&1 || load_rc=$? ;;
    h2c) h2load -t1 -c"$H2_CONNS" -m"$H2_STREAMS" -D "$DURATION" "$URL" >"$out" 2>&1 || load_rc=$? ;;
    *)
        log "unknown phase $phase"
        exit 2
        ;;
    esac
    # Both loops end at the deadline on their own; wait for them rather than kill.
    wait "$pusher_pid" || true
    wait "$sampler_pid" || true
    stop_pid "$pusher_pid"
    stop_pid "$sampler_pid"

    local requests rps failed detail pushes accepted refused push_p50 push_max seen
    if [[ $phase == h2c ]]; then
        requests=$(awk '/^requests:/ {print $6}' "$out")
        rps=$(awk '/^finished in/ {print $4}' "$out")
        failed=$(awk '/^requests:/ { e += $10 + $12 + $14 } /^status codes:/ { e += $7 + $9 } END { print e + 0 }' "$out")
        detail=$(awk '/^requests:/ { printf "failed %s, errored %s, timeout %s", $10, $12, $14 }
            /^status codes:/ { printf "; 4xx %s, 5xx %s", $7, $9 }' "$out")
    else
        requests=$(awk '/ requests in / {print $1}' "$out")
        rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
        failed=$(awk '/Socket errors:/ { gsub(",", ""); e += $4 + $6 + $8 + $10 }
            /Non-2xx or 3xx responses:/ { e += $NF } END { print e + 0 }' "$out")
        detail=$(awk '/Socket errors:/ { sub(/^ */, ""); printf "%s; ", $0 }
            /Non-2xx or 3xx responses:/ { printf "non-2xx/3xx %s", $NF }' "$out")
        [[ -n $detail ]] || detail="no socket errors, no non-2xx/3xx"
    fi
    if ((load_rc != 0)) || [[ -z $requests ]]; then
        detail="load tool exited $load_rc (see $out)"
        failed=${failed:-?}
    fi
    pushes=$(wc -l <"$RUN_DIR/pushes-$phase.log")
    accepted=$(awk '$2 == 200' "$RUN_DIR/pushes-$phase.log" | wc -l)
    refused=$((pushes - accepted))
    read -r push_p50 push_max < <(awk '{print $3 * 1000}' "$RUN_DIR/pushes-$phase.log" | sort -n | awk '
        { v[NR] = $1 } END { if (NR == 0) { print "- -"; exit } i = int(NR / 2); if (i < 1) i = 1; printf "%.1f %.1f\n", v[i], v[NR] }')
    seen=$(sort "$RUN_DIR/samples-$phase.log" | uniq -c | awk '{printf "%s%s×%s", sep, $2, $1; sep = ", "}')
    printf '| %s | %s | %.0f | **%s** | %s | %s (%.1f/s) | %s | %s | %s / %s | %s |\n' "$phase" "$requests" "${rps:-0}" \
        "$failed" "$detail" "$pushes" "$(awk -v p="$pushes" -v d="$DURATION" 'BEGIN { print p / d }')" \
        "$accepted" "$refused" "$push_p50" "$push_max" "${seen:-none}" \
        >>"$RUN_DIR/rows.md"
    NEXT_VERSION=$((version + pushes))
}

main() {
    ulimit -n "$(ulimit -Hn)"
    install_tools
    if [[ ${SKIP_BUILD:-0} != 1 ]]; then
        log "building culvert and culvert-echo (release) into $TARGET_DIR"
        (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR nice -n 10 \
            cargo build --release -p culvert -p culvert-bench --bins)
    fi
    local culvert=${CULVERT_BIN:-$TARGET_DIR/release/culvert} echo_bin=$TARGET_DIR/release/culvert-echo
    [[ -x $culvert && -x $echo_bin ]] || {
        log "missing $culvert or $echo_bin"
        exit 1
    }
    start_bg echo-a - "$echo_bin" --listen "127.0.0.1:$BACKEND_A_PORT" --name echo-a --protocol http1
    start_bg echo-b - "$echo_bin" --listen "127.0.0.1:$BACKEND_B_PORT" --name echo-b --protocol http1
    render "$HERE/config-a.json.in" 1 >"$RUN_DIR/initial.json"
    start_bg culvert - "$culvert" serve --config "$RUN_DIR/initial.json" \
        --control "127.0.0.1:$CONTROL_PORT" --workers "$WORKERS" --no-access-log --drain-grace 1s
    local culvert_pid=$STARTED
    for url in "http://127.0.0.1:$BACKEND_A_PORT/" "http://127.0.0.1:$BACKEND_B_PORT/" "$CONTROL/readyz" "$URL"; do
        wait_http "$url" || {
            log "$url did not come up; logs in $RUN_DIR"
            exit 1
        }
    done
    log "culvert pid $culvert_pid, $WORKERS workers; logs in $RUN_DIR"

    # Version 1 is the initial config; pushes go on from 2 across all phases.
    local phase version=2
    : >"$RUN_DIR/rows.md"
    for phase in $PHASES; do
        log "phase $phase: ${DURATION}s of load, $RATE pushes/s"
        run_phase "$phase" "$version"
        version=$NEXT_VERSION
        sleep 1
    done
    local final
    final=$(curl -s "$CONTROL/config" || echo '?')

    echo "# Culvert hot swap under load ($(date -u +%Y-%m-%dT%H:%MZ))"
    echo
    echo "- machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo); Culvert --workers $WORKERS; nothing pinned with taskset"
    echo "- ${DURATION}s of load per phase; $RATE PUT /config per second alternating config-a/config-b with increasing version; wrk -t1 -c$CONNS, h2load -t1 -c$H2_CONNS -m$H2_STREAMS"
    echo "- GET /config at the end: $final"
    echo
    echo "| phase | requests | req/s | failed | failure detail | pushes | accepted | refused | PUT ms p50 / max | configs seen by sampler |"
    echo "|---|---:|---:|---:|---|---:|---:|---:|---:|---|"
    cat "$RUN_DIR/rows.md"
    echo
    echo "Raw output: $RUN_DIR"
}

main "$@"
