# shellcheck shell=bash
# Process and measurement helpers shared by the bench scripts (sourced, not run).
#
# The sourcing script sets RUN_DIR (where output files go) and PIDS=() (every PID it
# started), and installs `trap cleanup EXIT`, so whatever it started is stopped on
# exit, by PID only.

# Stops every process this script started, newest first, by PID only.
cleanup() {
    local i
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
        stop_pid "${PIDS[i]}"
    done
}
# Running and not a zombie (a dead child stays a zombie until reaped, and kill -0
# still succeeds on it).
alive() { [[ -e /proc/$1 ]] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }

# TERM, up to 5 s to exit, then KILL; reaps it and drops it from PIDS so the exit trap
# never signals a PID the kernel may have handed to something else since.
stop_pid() {
    local pid=$1 _ keep=() p
    if alive "$pid"; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do
            alive "$pid" || break
            sleep 0.1
        done
        if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    fi
    wait "$pid" 2>/dev/null || true
    for p in "${PIDS[@]}"; do [[ $p == "$pid" ]] || keep+=("$p"); done
    PIDS=("${keep[@]}")
}

# Starts a command in the background, pinned to CPU list `cpu` unless it is `-`;
# sets STARTED to its PID (taskset execs the command, so the PID is the program's own).
start_bg() { # name cpu|- cmd...
    local name=$1 cpu=$2
    shift 2
    if [[ $cpu == - ]]; then
        "$@" >"$RUN_DIR/$name.out" 2>&1 &
    else
        taskset -c "$cpu" "$@" >"$RUN_DIR/$name.out" 2>&1 &
    fi
    STARTED=$!
    PIDS+=("$STARTED")
}

# Whether nothing listens on TCP port $1.
port_free() { ! ss -Hltn "sport = :$1" | grep -q .; }

# Exits with a message unless every port given is free.
require_free_ports() { # port...
    local port
    for port in "$@"; do
        port_free "$port" || {
            log "port $port is in use; stop what holds it first"
            exit 1
        }
    done
}

wait_http() { # url [seconds]
    local _
    for _ in $(seq $((${2:-10} * 10))); do
        curl -fsk -o /dev/null --max-time 1 "$1" && return 0
        sleep 0.1
    done
    return 1
}

# The PID and its children (nginx's master has its worker as a child).
family() { echo "$1"; ps -o pid= --ppid "$1" 2>/dev/null | tr -d ' ' || true; }

# utime+stime in clock ticks of a process and its children, from /proc/PID/stat
# (fields 14 and 15; the command name in field 2 may contain spaces, so cut after ')').
cpu_ticks() {
    local total=0 pid rest
    for pid in $(family "$1"); do
        [[ -r /proc/$pid/stat ]] || continue
        rest=$(sed 's/^.*) //' "/proc/$pid/stat")
        total=$((total + $(awk '{print $12 + $13}' <<<"$rest")))
    done
    echo "$total"
}

rss_kib() {
    local total=0 pid kib
    for pid in $(family "$1"); do
        kib=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        total=$((total + ${kib:-0}))
    done
    echo "$total"
}

to_ms() { # "612.00us" | "1.23ms" | "1.01s" -> milliseconds
    awk -v v="$1" 'BEGIN {
        n = v + 0
        if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /s$/) n *= 1000
        printf "%.3f", n }'
}


# Installs the Debian package of every command in `command:package` pairs that is not
# on the PATH; the package lists are refreshed only when a first install fails, as
# they are usually current enough. apt's output goes to $RUN_DIR/apt.log.
install_missing() { # command:package...
    local want=() pair
    for pair in "$@"; do
        command -v "${pair%%:*}" >/dev/null 2>&1 || want+=("${pair#*:}")
    done
    ((${#want[@]})) || return 0
    log "installing ${want[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends "${want[@]}" >"$RUN_DIR/apt.log" 2>&1 && return 0
    apt-get update >>"$RUN_DIR/apt.log" 2>&1 || true
    apt-get install -y --no-install-recommends "${want[@]}" >>"$RUN_DIR/apt.log" 2>&1 ||
        log "apt-get install failed; see $RUN_DIR/apt.log"
}

# A self-signed ECDSA P-256 certificate for localhost: cert.pem and key.pem in `dir`.
make_localhost_cert() { # dir
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
        -keyout "$1/key.pem" -out "$1/cert.pem" 2>/dev/null
}

# A Culvert config template (bench/compare/culvert.json.in) rendered for one backend,
# its three listener ports and the certificate make_localhost_cert wrote in `cert_dir`.
render_culvert_config() { # template out backend http_port h2c_port tls_port cert_dir
    sed -e "s#@BACKEND@#$3#" -e "s#@HTTP_PORT@#$4#" -e "s#@H2C_PORT@#$5#" \
        -e "s#@TLS_PORT@#$6#" -e "s#@CERT@#$7/cert.pem#" -e "s#@KEY@#$7/key.pem#" "$1" >"$2"
}
