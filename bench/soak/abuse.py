#!/usr/bin/env python3
"""Misbehaving clients for the soak, in the background (standard library only).

    abuse.py --port HTTP_PORT --tls-port TLS_PORT --cases smuggling.json
             --header-timeout SECONDS --deadline EPOCH --out DIR

Runs until the deadline (or SIGTERM), each behaviour in its own thread(s):

  slowloris   --slowloris connections, each sending a request head one byte every
              --trickle seconds and never finishing it. Culvert must cut each one
              within its header read timeout: the outcome (408, closed without an
              answer, or still open --header-timeout + 10 s later) and how long it
              lasted are tallied, then the connection is opened again.
  smuggling   the raw requests of proxy/tests/data/smuggling.json (the client-side
              cases; those that need a misbehaving backend are left out), one
              every --smuggle-every seconds, each on a new connection exactly as
              the test sends them (write, 300 ms pause, half-close, read up to
              3 s); the final status is compared with the case's `culvert.status`.
  mid-body    every --drop-every seconds, a POST announcing a 64 KiB body (by
              Content-Length, or chunked, alternately) that sends 1 KiB of it and
              closes: with a FIN or, every other time, a RST.
  connect     every --drop-every seconds, a connection opened and closed at once.
  tls-garbage every --tls-every seconds, 600 random bytes to the HTTPS listener;
              the reply (bytes) and whether it closed are tallied.
  tls-drop    every --tls-every seconds, a full TLS handshake with the HTTPS
              listener, then a close without a request.

DIR/abuse.json holds the tallies (rewritten every few seconds and at exit);
DIR/abuse-mismatch.tsv one line per smuggling answer unlike the table's
(`epoch<TAB>case<TAB>expected<TAB>got`), so the report can excuse those inside a
backend-flap window (a 200 case that met a dead backend).
"""

import argparse
import json
import os
import random
import signal
import socket
import ssl
import struct
import threading
import time

PAUSE = 0.3
READ_FOR = 3.0


class Tally:
    def __init__(self, out_dir):
        self.lock = threading.Lock()
        self.data = {}
        self.path = os.path.join(out_dir, "abuse.json")
        self.mismatch = open(os.path.join(out_dir, "abuse-mismatch.tsv"), "a", buffering=1)

    def add(self, behaviour, outcome, n=1):
        with self.lock:
            self.data.setdefault(behaviour, {})
            self.data[behaviour][outcome] = self.data[behaviour].get(outcome, 0) + n

    def put(self, behaviour, key, value):
        with self.lock:
            self.data.setdefault(behaviour, {})[key] = value

    def write(self):
        with self.lock:
            text = json.dumps(self.data, sort_keys=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w") as out:
            out.write(text)
        os.replace(tmp, self.path)


def case_bytes(value):
    def text_bytes(text):
        return bytes(ord(c) for c in text)

    if isinstance(value, str):
        return text_bytes(value)
    out = b""
    for part in value:
        if isinstance(part, str):
            out += text_bytes(part)
        else:
            out += text_bytes(part["repeat"]) * part["times"]
    return out


def final_status(data):
    """The first non-1xx status line at the start of the reply or after a newline."""
    at = 0
    while at < len(data):
        line = data[at:at + 13]
        if (line.startswith(b"HTTP/1.") and len(line) == 13 and line[8:9] == b" "
                and line[12:13] == b" " and line[9:12].isdigit()):
            code = int(line[9:12])
            if code >= 200:
                return code
        nl = data.find(b"\n", at)
        if nl < 0:
            break
        at = nl + 1
    return None


def sleep_until(stop, deadline, seconds):
    return stop.wait(max(0.0, min(seconds, deadline - time.time())))


def slowloris(args, tally, stop, index):
    head = f"GET /slow/{index} HTTP/1.1\r\nHost: soak.example\r\nX-Slow: ".encode() + b"a" * 65536
    limit = args.header_timeout + 10
    time.sleep(random.random() * args.trickle)
    while not stop.is_set() and time.time() < args.deadline:
        opened = time.time()
        try:
            sock = socket.create_connection(("127.0.0.1", args.port), timeout=5)
        except OSError as err:
            tally.add("slowloris", f"connect failed: {err.strerror or err}")
            sleep_until(stop, args.deadline, 1)
            continue
        tally.add("slowloris", "opened")
        sock.settimeout(args.trickle)
        got = b""
        outcome = None
        sent = 0
        try:
            while outcome is None:
                if stop.is_set() or time.time() >= args.deadline:
                    outcome = "open at the end of the run"
                    break
                if time.time() - opened > limit:
                    outcome = f"NOT CUT after {limit:.0f} s"
                    break
                try:
                    sock.sendall(head[sent:sent + 1])
                    sent += 1
                except OSError:
                    pass  # the proxy may have answered and closed: read it below
                try:
                    chunk = sock.recv(4096)
                    if not chunk:
                        outcome = final_status(got) or "closed without an answer"
                    got += chunk
                except socket.timeout:
                    continue
                except OSError as err:
                    outcome = final_status(got) or f"reset ({err.strerror or err})"
        finally:
            sock.close()
        lasted = time.time() - opened
        key = outcome if isinstance(outcome, str) else f"answered {outcome}"
        tally.add("slowloris", key)
        if outcome != "open at the end of the run":
            with tally.lock:
                entry = tally.data.setdefault("slowloris", {})
                entry["longest_s"] = round(max(entry.get("longest_s", 0), lasted), 1)
                entry["shortest_s"] = round(min(entry.get("shortest_s", lasted), lasted), 1)


def exchange(port, request):
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        try:
            sock.sendall(request)
        except OSError:
            pass  # a peer that refuses early may reset before a large request is written
        time.sleep(PAUSE)
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        data = b""
        end = time.time() + READ_FOR
        while time.time() < end:
            sock.settimeout(max(0.01, end - time.time()))
            try:
                chunk = sock.recv(65536)
            except (socket.timeout, OSError):
                break
            if not chunk:
                break
            data += chunk
        return data
    finally:
        sock.close()


def smuggling(args, tally, stop):
    with open(args.cases) as src:
        table = json.load(src)
    cases = [c for c in table["cases"] if "backend_response" not in c and c["category"] != "response"]
    tally.put("smuggling", "cases in the rotation", len(cases))
    i = 0
    while not stop.is_set() and time.time() < args.deadline:
        case = cases[i % len(cases)]
        i += 1
        expected = case["culvert"]["status"]
        started = time.time()
        try:
            got = final_status(exchange(args.port, case_bytes(case["request"])))
        except OSError as err:
            got = f"connect failed: {err.strerror or err}"
        tally.add("smuggling", "sent")
        tally.add("smuggling", f"answered {got}" if isinstance(got, int) else
                  ("no answer" if got is None else got))
        if got == expected:
            tally.add("smuggling", "as the table says")
        else:
            tally.add("smuggling", "unlike the table")
            tally.mismatch.write(f"{started:.6f}\t{case['name']}\t{expected}\t{got}\n")
        sleep_until(stop, args.deadline, args.smuggle_every)


def mid_body(args, tally, stop):
    n = 0
    while not stop.is_set() and time.time() < args.deadline:
        n += 1
        chunked = n % 2 == 0
        rst = (n // 2) % 2 == 1
        behaviour = "mid-body"
        try:
            sock = socket.create_connection(("127.0.0.1", args.port), timeout=5)
            if chunked:
                head = (f"POST /upload/{n} HTTP/1.1\r\nHost: soak.example\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n10000\r\n").encode()
            else:
                head = (f"POST /upload/{n} HTTP/1.1\r\nHost: soak.example\r\n"
                        "Content-Length: 65536\r\n\r\n").encode()
            sock.sendall(head + os.urandom(1024))
            time.sleep(0.05 + random.random() * 0.15)
            if rst:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
            tally.add(behaviour, "sent " + ("chunked" if chunked else "content-length") +
                      (" + RST" if rst else " + FIN"))
        except OSError as err:
            tally.add(behaviour, f"failed to send: {err.strerror or err}")
        try:
            sock = socket.create_connection(("127.0.0.1", args.port), timeout=5)
            sock.close()
            tally.add("connect", "opened and closed")
        except OSError as err:
            tally.add("connect", f"connect failed: {err.strerror or err}")
        sleep_until(stop, args.deadline, args.drop_every)


def tls(args, tally, stop):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2", "http/1.1"])
    while not stop.is_set() and time.time() < args.deadline:
        try:
            sock = socket.create_connection(("127.0.0.1", args.tls_port), timeout=5)
            sock.sendall(os.urandom(600))
            got = b""
            closed = "still open after 5 s"
            try:
                while True:
                    chunk = sock.recv(4096)
                    if not chunk:
                        closed = "closed"
                        break
                    got += chunk
            except socket.timeout:
                pass
            except OSError:
                closed = "reset"
            sock.close()
            alert = " (a TLS alert)" if got[:1] == b"\x15" else ""
            tally.add("tls-garbage", f"{closed}, {len(got)} bytes back{alert}")
        except OSError as err:
            tally.add("tls-garbage", f"connect failed: {err.strerror or err}")
        try:
            raw = socket.create_connection(("127.0.0.1", args.tls_port), timeout=5)
            with context.wrap_socket(raw, server_hostname="soak.example") as conn:
                tally.add("tls-drop", f"handshake done ({conn.selected_alpn_protocol()}), closed")
        except (OSError, ssl.SSLError) as err:
            tally.add("tls-drop", f"handshake failed: {err}")
        sleep_until(stop, args.deadline, args.tls_every)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tls-port", type=int, required=True)
    parser.add_argument("--cases", required=True)
    parser.add_argument("--header-timeout", type=float, default=30.0)
    parser.add_argument("--slowloris", type=int, default=16)
    parser.add_argument("--trickle", type=float, default=2.0)
    parser.add_argument("--smuggle-every", type=float, default=0.5)
    parser.add_argument("--drop-every", type=float, default=0.25)
    parser.add_argument("--tls-every", type=float, default=1.0)
    parser.add_argument("--deadline", type=float, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    tally = Tally(args.out)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    threads = [threading.Thread(target=slowloris, args=(args, tally, stop, i), daemon=True)
               for i in range(args.slowloris)]
    threads += [threading.Thread(target=f, args=(args, tally, stop), daemon=True)
                for f in (smuggling, mid_body, tls)]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        tally.write()
        if stop.wait(5) or time.time() > args.deadline + args.trickle + 10:
            break
    stop.set()
    for thread in threads:
        thread.join(args.trickle + 5)
    tally.write()


if __name__ == "__main__":
    main()
