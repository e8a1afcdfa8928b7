#!/usr/bin/env python3
"""Reads what bench/soak/run.sh left in its run directory and prints the soak report
(Markdown) on stdout; exits 1 when a check fails, 0 when all pass.

    report.py RUN_DIR

Every failed request with a time is classified against the disruption windows the
run recorded in windows.tsv: a failure whose [start, end] overlaps a backend-flap
window of a backend its kind can reach, or (tunnel traffic only) an edge-restart
window, is "expected"; any other failure is unexpected and fails the run. Failures
a tool reports only as a count (wrk's socket errors, h2load requests that never got
a log row) are placed by the chunk of the run they happened in: expected when that
chunk overlaps such a window.
"""

import glob
import json
import math
import os
import re
import sys
from datetime import datetime, timezone

RUN = sys.argv[1]
MIB = 1024.0


def path(*parts):
    return os.path.join(RUN, *parts)


def read_meta():
    meta = {}
    with open(path("meta.txt")) as src:
        for line in src:
            key, _, value = line.rstrip("\n").partition(" ")
            meta[key] = value
    return meta


META = read_meta()
T0 = float(META["t0"])
END = float(META["deadline"])
FLAP_SLACK = float(META.get("flap_grace", "1"))


def num(key, default=0.0):
    try:
        return float(META.get(key, default))
    except ValueError:
        return default


def rel(t):
    return t - T0


def lines(name):
    try:
        with open(path(name)) as src:
            return [line.rstrip("\n") for line in src if line.strip()]
    except FileNotFoundError:
        return []


# ---- disruption windows -------------------------------------------------------

FLAPS = []  # (backend, down, up or None)
EDGES = []  # (signal, down, up, first_registered, all_registered)
for line in lines("windows.tsv"):
    f = line.split("\t")
    if f[0] == "flap":
        FLAPS.append((f[1], float(f[2]), float(f[3]) if f[3] != "-" else None))
    elif f[0] == "edge":
        opt = [float(x) if x != "-" else None for x in f[3:6]]
        EDGES.append((f[1], float(f[2]), *opt, f[6] if len(f) > 6 else "?"))

KIND_BACKENDS = {}
for item in META.get("kind_backends", "").split():
    kind, _, backends = item.partition("=")
    KIND_BACKENDS[kind] = set(backends.split(","))


def window_of(kind, start, end):
    """Why a failure of `kind` in [start, end] is expected, or None."""
    for backend, down, up in FLAPS:
        if backend not in KIND_BACKENDS.get(kind, ()):
            continue
        stop = (up if up is not None else END) + FLAP_SLACK
        if end >= down - 0.05 and start <= stop:
            return "flap"
    if kind == "tunnel":
        for _, down, up, first, _all, _transports in EDGES:
            stop = (first if first is not None else END) + FLAP_SLACK
            if end >= down - 0.05 and start <= stop:
                return "edge"
    return None


class Kind:
    def __init__(self, name, tool):
        self.name = name
        self.tool = tool
        self.sent = 0
        self.ok = 0
        self.expected = {"flap": 0, "edge": 0}
        self.unexpected = 0
        self.details = {}
        self.notes = []

    def fail(self, start, end, detail, count=1):
        why = window_of(self.name, start, end)
        if why:
            self.expected[why] += count
        else:
            self.unexpected += count
            key = detail[:90]
            entry = self.details.setdefault(key, [0, start])
            entry[0] += count

    @property
    def failed(self):
        return self.unexpected + sum(self.expected.values())


def chunks(kind):
    out = []
    for line in lines(f"chunks-{kind}.tsv"):
        index, start, end, rc = line.split("\t")
        out.append((int(index), float(start), float(end), int(rc)))
    return out


def wrk_kind(kind):
    k = Kind(kind, "wrk")
    for index, start, end, rc in chunks(kind):
        text = open(path(f"{kind}", f"{index:04d}.txt")).read()
        m = re.search(r"^\s*(\d+) requests in", text, re.M)
        requests = int(m.group(1)) if m else 0
        if not m:
            k.notes.append(f"chunk {index} printed no summary (rc {rc})")
            if rc != 0:
                k.fail(start, end, f"wrk exited {rc}")
        sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
        socket_errors = sum(int(x) for x in sock.groups()) if sock else 0
        non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
        non2xx = int(non2xx.group(1)) if non2xx else 0
        k.sent += requests + (int(sock.group(1)) if sock else 0)
        k.ok += requests - non2xx
        if socket_errors:
            detail = "socket errors: " + ", ".join(
                f"{n} {v}" for n, v in zip(("connect", "read", "write", "timeout"), sock.groups()) if v != "0")
            k.fail(start, end, detail, socket_errors)
    logged = 0
    for line in lines(f"{kind}/fail.tsv"):
        t, status = line.split("\t")
        t = float(t)
        k.fail(t - 1.0, t, f"status {status}")
        logged += 1
    return k


def h2load_kind(kind, grpc=False):
    k = Kind(kind, "h2load")
    for index, start, end, rc in chunks(kind):
        base = path(kind, f"{index:04d}")
        text = open(base + ".txt").read()
        m = re.search(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                      r"(\d+) errored, (\d+) timeout", text, re.M)
        if not m:
            k.notes.append(f"chunk {index} printed no summary (rc {rc})")
            k.fail(start, end, f"h2load exited {rc} without a summary")
            continue
        done, succeeded, failed = int(m.group(3)), int(m.group(4)), int(m.group(5))
        codes = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text, re.M)
        k.sent += done
        k.ok += succeeded
        rows = 0
        for line in lines(os.path.relpath(base + ".fail.tsv", RUN)):
            f = line.split("\t")
            t0 = int(f[0]) / 1e6
            status = int(f[1])
            elapsed = max(0, int(f[2])) / 1e6 if len(f) > 2 else 0
            k.fail(t0, t0 + elapsed, "stream failed (no status)" if status < 0 else f"status {status}")
            rows += 1
        if failed > rows:
            k.fail(start, end, "failed without a log row (connection-level)", failed - rows)
        if codes and (int(codes.group(3)) or int(codes.group(4))) and rows == 0 and failed == 0:
            k.notes.append(f"chunk {index}: 4xx/5xx without failed count")
    if grpc:
        # h2load sees only the HTTP status; a gRPC error rides in grpc-status with a
        # 200. Culvert logs every call whose grpc-status is not OK: those are counted
        # here as failures of this kind.
        bad = 0
        for line in access_log():
            if line.get("route") != "soak/grpc":
                continue
            code = line.get("grpcStatus")
            if code in (None, 0):
                continue
            start = parse_time(line["time"])
            end = start + float(line.get("durationMs") or 0) / 1000
            if not T0 - 5 <= start <= END + 30:
                continue
            k.fail(start, end, f"grpc-status {code} ({line.get('failure') or 'from the backend'})")
            bad += 1
        k.ok -= bad
        k.notes.append(f"{bad} calls with grpc-status other than 0 (from Culvert's access log)")
    return k


def python_kind(kind):
    k = Kind(kind, "clients.py")
    try:
        summary = json.load(open(path(f"summary-{kind}.json")))
    except FileNotFoundError:
        k.notes.append("no summary: the client did not run")
        k.unexpected += 1
        k.details["client did not run"] = [1, T0]
        return k
    k.sent = summary["sent"]
    k.ok = summary["ok"]
    for line in lines(f"fail-{kind}.tsv"):
        start, end, detail = line.split("\t", 2)
        k.fail(float(start), float(end), detail)
    extra = summary.get("extra") or {}
    if kind == "ws" and "messages" in extra:
        k.notes.append(f"{extra['messages']} messages echoed")
    if extra.get("stale_retries"):
        k.notes.append(f"{extra['stale_retries']} requests resent once after their kept-alive "
                       "connection closed before any answer")
    return k


_ACCESS = None


def parse_time(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def access_log():
    global _ACCESS
    if _ACCESS is None:
        _ACCESS = []
        try:
            with open(path("culvert.out"), errors="replace") as src:
                for line in src:
                    if not line.startswith("{") or '"status"' not in line:
                        continue
                    try:
                        _ACCESS.append(json.loads(line))
                    except ValueError:
                        pass
        except FileNotFoundError:
            pass
    return _ACCESS


# ---- gather ---------------------------------------------------------------------

KINDS = []
for spec in META.get("kinds", "").split():
    name, _, tool = spec.partition(":")
    if tool == "wrk":
        KINDS.append(wrk_kind(name))
    elif tool == "h2load":
        KINDS.append(h2load_kind(name))
    elif tool == "h2load-grpc":
        KINDS.append(h2load_kind(name, grpc=True))
    else:
        KINDS.append(python_kind(name))

pushes = [line.split() for line in lines("pushes.log")]
push_ok = sum(1 for p in pushes if p[2] == "200")
push_ms = sorted(float(p[3]) * 1000 for p in pushes) or [0.0]

samples = []
for line in lines("samples.tsv"):
    t, rss, fds, threads = line.split("\t")
    samples.append((float(t), int(rss), int(fds), int(threads)))

metrics = lines("metrics.txt")
refused = {}
panics = None
for line in metrics:
    m = re.match(r'culvert_refused_total\{reason="([^"]+)"\} (\S+)', line)
    if m:
        refused[m.group(1)] = int(float(m.group(2)))
    m = re.match(r"culvert_panics_total (\S+)", line)
    if m:
        panics = int(float(m.group(1)))

try:
    abuse = json.load(open(path("abuse.json")))
except FileNotFoundError:
    abuse = {}
mismatches = [line.split("\t") for line in lines("abuse-mismatch.tsv")]

# ---- checks ---------------------------------------------------------------------

checks = []


def check(ok, text):
    checks.append((bool(ok), text))


for k in KINDS:
    check(k.sent > 0, f"{k.name}: traffic ran ({k.sent} sent)")
    check(k.unexpected == 0, f"{k.name}: 0 failed outside flap/restart windows (got {k.unexpected})")

check(pushes and push_ok == len(pushes),
      f"config pushes: all accepted ({push_ok} of {len(pushes)})")
expected_pushes = int((END - T0) / num("push_every", 1))
check(len(pushes) >= 0.9 * expected_pushes,
      f"config pushes: kept the pace ({len(pushes)} of about {expected_pushes})")

warm = None
if samples:
    after = [s for s in samples if rel(s[0]) >= num("warmup")]
    warm = after[0] if after else samples[-1]
    last = samples[-1]
    rss_limit = warm[1] * 1.10 + 8 * 1024
    rss_flat = last[1] <= rss_limit
    settled_fds = int(META["settled_fds"]) if META.get("settled_fds", "").isdigit() else None
    settled_rss = int(META["settled_rss_kib"]) if META.get("settled_rss_kib", "").isdigit() else None
    fd_limit = math.floor(warm[2] * 1.05)
    fds_flat = settled_fds is not None and settled_fds <= fd_limit
    check(rss_flat, f"RSS flat: last {last[1] / MIB:.1f} MiB <= warm-up {warm[1] / MIB:.1f} MiB "
                    f"+ 10 % + 8 MiB = {rss_limit / MIB:.1f} MiB")
    check(fds_flat, f"fds back: {settled_fds} open {META.get('settle', '?')} s after the load "
                    f"stopped <= warm-up {warm[2]} + 5 % = {fd_limit}")
else:
    check(False, "RSS/fd samples: none taken")

check(panics == 0, f"culvert_panics_total is 0 (got {panics})")
check(META.get("alive_at_end") == "yes", "Culvert still running at the end")
check(META.get("healthz_at_end") == "200", f"/healthz answered 200 at the end (got {META.get('healthz_at_end')})")
for sig, down, up, first, all_, _transports in EDGES:
    check(first is not None,
          f"tunnel re-registered after the edge restart at +{rel(down):.0f} s ({sig})")

smuggle_bad = []
for t, name, expected, got in mismatches:
    # A case whose head Culvert takes goes to the backend; if that backend is down,
    # the answer is its 502/503 whatever the case expected.
    why = window_of("h1", float(t), float(t) + 3.5) if got in ("502", "503") else None
    if not why:
        smuggle_bad.append((float(t), name, expected, got))
if "smuggling" in abuse:
    check(not smuggle_bad, f"smuggling replays answered as the table says, outside flap windows "
                           f"({len(smuggle_bad)} unlike it)")
if "slowloris" in abuse:
    not_cut = sum(v for key, v in abuse["slowloris"].items() if key.startswith("NOT CUT"))
    check(not_cut == 0, f"slowloris: every connection cut by the header timeout ({not_cut} not)")

# ---- print ------------------------------------------------------------------------

out = []
p = out.append
duration = END - T0
p(f"# Culvert soak ({datetime.fromtimestamp(T0, timezone.utc):%Y-%m-%dT%H:%MZ}, {duration:.0f} s)")
p("")
p(f"- commit {META.get('commit', '?')}; {META.get('machine', '?')}; Culvert `--workers {META.get('workers')}`, "
  f"tunnel `--tunnel-protocol {META.get('tunnel_protocol')}`, `--header-read-timeout {META.get('header_timeout')}s`")
p(f"- load (per second): {META.get('load', '?')}")
culvert_cpu = (f"{num('culvert_cpu_s'):.0f} s ({100 * num('culvert_cpu_s') / duration:.0f} % of a core)"
               if "culvert_cpu_s" in META else "? (it exited)")
p(f"- CPU: Culvert {culvert_cpu}; "
  f"everything the soak started, Culvert included, {num('total_cpu_s'):.0f} s "
  f"({100 * num('total_cpu_s') / duration:.0f} % of a core)")
p(f"- config pushes: {len(pushes)} ({len(pushes) / duration:.2f}/s), {push_ok} accepted, "
  f"{len(pushes) - push_ok} refused; PUT ms p50 {push_ms[len(push_ms) // 2]:.1f}, max {push_ms[-1]:.1f}; "
  f"GET /config at the end: {META.get('final_config', '?')}")
p(f"- backend flaps: {len(FLAPS)} (SIGKILL, restarted {META.get('flap_down')} s later); "
  f"edge restarts: {len(EDGES)}; tunnel connections at the end: {META.get('tunnel_transports_at_end', '?')}")
if META.get("culvert_exited_at"):
    p(f"- **Culvert exited at +{rel(float(META['culvert_exited_at'])):.0f} s**; the run stopped there. "
      "Its last log lines:")
    p("")
    p("```")
    tail = [line for line in lines("culvert.out") if '"status"' not in line][-15:]
    out.extend(tail)
    p("```")
p("")
p("## Traffic")
p("")
p("Failed = answers that were not 2xx/3xx (gRPC: also grpc-status other than 0), connection "
  "errors and timeouts. \"During flap\" / \"during edge restart\": failures inside the window "
  f"from the kill until the backend (edge: the first tunnel connection) was back, + {FLAP_SLACK:g} s.")
p("")
p("| kind | tool | sent | ok | **failed, unexpected** | during flap | during edge restart | notes |")
p("|---|---|---:|---:|---:|---:|---:|---|")
for k in KINDS:
    notes = "; ".join(k.notes + [f"{n}× {d} (first at +{rel(t):.1f} s)" for d, (n, t) in
                                 sorted(k.details.items(), key=lambda kv: -kv[1][0])[:4]])
    p(f"| {k.name} | {k.tool} | {k.sent} | {k.ok} | **{k.unexpected}** | {k.expected['flap']} | "
      f"{k.expected['edge']} | {notes or '-'} |")
total_sent = sum(k.sent for k in KINDS)
p(f"| all | | {total_sent} | {sum(k.ok for k in KINDS)} | **{sum(k.unexpected for k in KINDS)}** | "
  f"{sum(k.expected['flap'] for k in KINDS)} | {sum(k.expected['edge'] for k in KINDS)} | |")
p("")

if FLAPS or EDGES:
    p("## Disruptions")
    p("")
    p("| at (s) | what | back after (s) | failed requests in the window |")
    p("|---:|---|---:|---|")
    events = [(d, "flap", b, u, None, None) for b, d, u in FLAPS] + \
             [(d, "edge", s, f, a, t) for s, d, _u, f, a, t in EDGES]
    for down, what, name, back, all_, transports in sorted(events, key=lambda e: e[0]):
        stop = (back if back is not None else END) + FLAP_SLACK
        hits = []
        for k in KINDS:
            kinds_ok = (what == "flap" and name in KIND_BACKENDS.get(k.name, ())) or \
                       (what == "edge" and k.name == "tunnel")
            if kinds_ok:
                hits.append(k.name)
        if what == "flap":
            label = f"backend {name} killed"
        else:
            label = f"edge simulator restarted ({name})"
            if all_ is not None:
                label += f"; all tunnel connections back after {all_ - down:.1f} s ({transports})"
            else:
                label += f"; NOT all tunnel connections back ({transports})"
        back_s = f"{back - down:.1f}" if back is not None else "never"
        p(f"| +{rel(down):.0f} | {label} | {back_s} | kinds that reach it: {', '.join(hits) or '-'} |")
    p("")

p("## Misbehaving clients (expected to be refused)")
p("")
p("| behaviour | what they got |")
p("|---|---|")
for behaviour in ("slowloris", "smuggling", "mid-body", "connect", "tls-garbage", "tls-drop"):
    if behaviour in abuse:
        items = ", ".join(f"{key}: {value}" for key, value in sorted(abuse[behaviour].items()))
        p(f"| {behaviour} | {items} |")
p("")
if mismatches:
    p(f"Smuggling answers unlike the table: {len(mismatches)} ({len(mismatches) - len(smuggle_bad)} "
      "of them a 502/503 inside a backend-flap window)")
    by_case = {}
    for t, name, expected, got in smuggle_bad:
        by_case.setdefault((name, expected, got), []).append(t)
    for (name, expected, got), ts in sorted(by_case.items()):
        p(f"- `{name}`: expected {expected}, got {got} ×{len(ts)} (first at +{rel(ts[0]):.1f} s)")
    p("")

p(f"## Culvert's RSS and open file descriptors (every {META.get('sample_every')} s)")
p("")
if samples:
    every = max(1, math.ceil(len(samples) / 60))
    shown = [s for i, s in enumerate(samples) if i % every == 0 or i == len(samples) - 1]
    if every > 1:
        p(f"(every {every}th sample shown; all in samples.tsv)")
        p("")
    p("| t (s) | RSS MiB | fds | threads | |")
    p("|---:|---:|---:|---:|---|")
    for s in shown:
        mark = "warm-up done" if s is warm else ""
        p(f"| {rel(s[0]):.0f} | {s[1] / MIB:.1f} | {s[2]} | {s[3]} | {mark} |")
    first, last = samples[0], samples[-1]
    peak_rss = max(samples, key=lambda s: s[1])
    peak_fds = max(samples, key=lambda s: s[2])
    p("")
    p(f"- RSS MiB: first {first[1] / MIB:.1f}, after warm-up ({num('warmup'):.0f} s) {warm[1] / MIB:.1f}, "
      f"max {peak_rss[1] / MIB:.1f} (at +{rel(peak_rss[0]):.0f} s), last {last[1] / MIB:.1f}")
    p(f"- fds: first {first[2]}, after warm-up {warm[2]}, max {peak_fds[2]} (at +{rel(peak_fds[0]):.0f} s), "
      f"last {last[2]}; {META.get('settle', '?')} s after the load stopped: "
      + (f"{settled_fds} fds, {settled_rss / MIB:.1f} MiB" if settled_fds is not None and settled_rss is not None
         else "no sample (Culvert gone)"))
    verdict = "flat" if rss_flat and fds_flat else "GROWING"
    p(f"- verdict: **{verdict}** (RSS {'within' if rss_flat else 'OVER'} 10 % + 8 MiB of warm-up; "
      f"fds {'back within' if fds_flat else 'NOT back within'} 5 % of warm-up)")
p("")
p("## /metrics at the end")
p("")
p("```")
for reason, value in refused.items():
    p(f'culvert_refused_total{{reason="{reason}"}} {value}')
p(f"culvert_panics_total {panics}")
p("```")
p("")
failures_logged = [a for a in access_log() if T0 - 5 <= parse_time(a["time"]) <= END + 30]
if failures_logged:
    groups = {}
    for a in failures_logged:
        start = parse_time(a["time"])
        in_window = any(end_ >= d - 0.05 and start <= (u if u is not None else END) + FLAP_SLACK
                        for _b, d, u in FLAPS for end_ in [start + float(a.get("durationMs") or 0) / 1000])
        key = (a.get("entry"), a.get("status"), a.get("failure"), a.get("grpcStatus"),
               "in a flap window" if in_window else "outside flap windows")
        groups[key] = groups.get(key, 0) + 1
    p(f"Culvert's access log (failures only): {len(failures_logged)} lines")
    p("")
    p("| entry | status | failure | grpcStatus | when | lines |")
    p("|---|---:|---|---:|---|---:|")
    for key, n in sorted(groups.items(), key=lambda kv: -kv[1])[:12]:
        p(f"| {key[0]} | {key[1]} | {key[2] or '-'} | {key[3] if key[3] is not None else '-'} | {key[4]} | {n} |")
    p("")
p("## Checks")
p("")
for ok, text in checks:
    p(f"- {'PASS' if ok else '**FAIL**'}: {text}")
p("")
failed = [text for ok, text in checks if not ok]
p(f"**{'SOAK PASSED' if not failed else f'SOAK FAILED ({len(failed)} checks)'}**; raw output in {RUN}")
print("\n".join(out))
sys.exit(1 if failed else 0)
