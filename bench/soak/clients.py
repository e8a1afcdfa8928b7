#!/usr/bin/env python3
"""Paced traffic the soak cannot get from wrk or h2load (standard library only).

    clients.py KIND --host H --port P --rate R --deadline EPOCH --out DIR [options]

KIND is one of
  h1-close  HTTP/1.1, a new TCP connection per request (`Connection: close`)
  tunnel    HTTP/1.1 keep-alive to the edge simulator's public side, so every
            request crosses the tunnel to Culvert's connector
  ws        WebSocket sessions: upgrade, echo --messages text messages (each
            checked), close handshake, repeat

Requests (sessions for `ws`) start on a fixed schedule, --rate per second in all,
spread over --workers threads; a worker that falls more than a second behind
skips ahead instead of bursting. Every failure is appended to DIR/fail-KIND.tsv as
`start<TAB>end<TAB>detail` (epoch seconds), so the report can tell failures inside
a backend-flap or edge-restart window from the others; DIR/summary-KIND.json holds
the counts (rewritten every few seconds and at exit). Runs until the deadline or
SIGTERM/SIGINT.
"""

import argparse
import base64
import hashlib
import json
import os
import random
import signal
import socket
import threading
import time

WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class Failed(Exception):
    """A request that did not get the answer it should have; the text says why."""


class Reader:
    """Buffered reads from a socket with a deadline per read."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def recv(self, waiting_for="read timeout"):
        """The next bytes from the socket (b"" once the peer closed)."""
        try:
            return self.sock.recv(65536)
        except socket.timeout as err:
            raise Failed(waiting_for) from err
        except OSError as err:
            raise Failed(f"read: {err.strerror or err}") from err

    def fill(self):
        chunk = self.recv()
        if not chunk:
            raise Failed("closed before the answer ended")
        self.buf += chunk

    def until(self, marker, limit=1 << 20):
        while marker not in self.buf:
            if len(self.buf) > limit:
                raise Failed("answer head too long")
            self.fill()
        at = self.buf.index(marker) + len(marker)
        out, self.buf = self.buf[:at], self.buf[at:]
        return out

    def exactly(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def to_eof(self, limit=1 << 22):
        while True:
            chunk = self.recv("read timeout waiting for close")
            if not chunk:
                out, self.buf = self.buf, b""
                return out
            self.buf += chunk
            if len(self.buf) > limit:
                raise Failed("answer too long")


def read_response(reader, method="GET"):
    """Reads one HTTP/1.1 response; returns (status, headers dict, body)."""
    head = reader.until(b"\r\n\r\n").decode("latin-1")
    lines = head.split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise Failed(f"bad status line {lines[0][:60]!r}")
    try:
        status = int(parts[1])
    except ValueError as err:
        raise Failed(f"bad status line {lines[0][:60]!r}") from err
    headers = {}
    for line in lines[1:]:
        if not line:
            continue
        name, _, value = line.partition(":")
        headers.setdefault(name.strip().lower(), value.strip())
    if status == 101 or status in (204, 304) or 100 <= status < 200 or method == "HEAD":
        return status, headers, b""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = b""
        while True:
            size_line = reader.until(b"\r\n").decode("latin-1").strip()
            try:
                size = int(size_line.split(";")[0], 16)
            except ValueError as err:
                raise Failed(f"bad chunk size {size_line[:20]!r}") from err
            if size == 0:
                while reader.until(b"\r\n") != b"\r\n":
                    pass
                return status, headers, body
            body += reader.exactly(size)
            reader.exactly(2)
    if "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError as err:
            raise Failed("bad content-length") from err
        return status, headers, reader.exactly(length)
    return status, headers, reader.to_eof()


class Stats:
    """Counts and the failure log of one kind, shared by its workers."""

    def __init__(self, kind, out_dir):
        self.kind = kind
        self.lock = threading.Lock()
        self.counts = {"sent": 0, "ok": 0, "failed": 0}
        self.extra = {}
        self.fail_file = open(os.path.join(out_dir, f"fail-{kind}.tsv"), "a", buffering=1)
        self.summary_path = os.path.join(out_dir, f"summary-{kind}.json")

    def result(self, start, error, extra=None):
        end = time.time()
        with self.lock:
            self.counts["sent"] += 1
            if error is None:
                self.counts["ok"] += 1
            else:
                self.counts["failed"] += 1
                detail = str(error).replace("\t", " ").replace("\n", " ")[:200]
                self.fail_file.write(f"{start:.6f}\t{end:.6f}\t{detail}\n")
            for key, value in (extra or {}).items():
                self.extra[key] = self.extra.get(key, 0) + value

    def write_summary(self):
        with self.lock:
            data = {"kind": self.kind, **self.counts, "extra": dict(self.extra)}
        tmp = self.summary_path + ".tmp"
        with open(tmp, "w") as out:
            json.dump(data, out)
        os.replace(tmp, self.summary_path)


def connect(host, port, timeout):
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except socket.timeout as err:
        raise Failed("connect timeout") from err
    except OSError as err:
        raise Failed(f"connect: {err.strerror or err}") from err
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def send(sock, data):
    try:
        sock.sendall(data)
    except OSError as err:
        raise Failed(f"write: {err.strerror or err}") from err


def h1_close_once(args, state, seq):
    sock = connect(args.host, args.port, args.timeout)
    try:
        send(sock, (f"GET /close/{seq} HTTP/1.1\r\nHost: {args.host_header}\r\n"
                    "Connection: close\r\nUser-Agent: culvert-soak\r\n\r\n").encode())
        status, _, body = read_response(Reader(sock))
        if not 200 <= status < 400:
            raise Failed(f"status {status}")
        if f"/close/{seq}".encode() not in body:
            raise Failed("echo body does not name the request")
    finally:
        sock.close()
    return None


def keepalive_once(args, state, seq):
    """One request on the worker's kept-alive connection (reconnecting when needed).
    As browsers do, a request that finds its reused connection closed before a
    single byte of answer is sent once more on a new connection (counted as
    `stale_retries`)."""
    for attempt in (1, 2):
        reused = state.get("sock") is not None
        if not reused:
            state["sock"] = connect(args.host, args.port, args.timeout)
            state["reader"] = Reader(state["sock"])
        sock, reader = state["sock"], state["reader"]
        try:
            send(sock, (f"GET /tunnel/{seq} HTTP/1.1\r\nHost: {args.host_header}\r\n"
                        "User-Agent: culvert-soak\r\n\r\n").encode())
            if reused and not reader.buf:
                reader.fill()
            status, headers, body = read_response(reader)
        except Failed as err:
            stale = reused and not reader.buf and ("closed before" in str(err) or "reset" in str(err))
            drop(state)
            if stale and attempt == 1:
                continue
            raise
        except Exception:
            drop(state)
            raise
        if headers.get("connection", "").lower() == "close":
            drop(state)
        if not 200 <= status < 400:
            raise Failed(f"status {status}: {body[:80]!r}")
        if f"/tunnel/{seq}".encode() not in body:
            raise Failed("echo body does not name the request")
        return {"stale_retries": attempt - 1}
    return None


def drop(state):
    sock = state.pop("sock", None)
    state.pop("reader", None)
    if sock is not None:
        sock.close()


def ws_frame(opcode, payload, mask=True):
    head = bytes([0x80 | opcode])
    n = len(payload)
    bit = 0x80 if mask else 0
    if n < 126:
        head += bytes([bit | n])
    elif n < 65536:
        head += bytes([bit | 126]) + n.to_bytes(2, "big")
    else:
        head += bytes([bit | 127]) + n.to_bytes(8, "big")
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def ws_read(reader):
    b0, b1 = reader.exactly(2)
    opcode, n = b0 & 0x0F, b1 & 0x7F
    if n == 126:
        n = int.from_bytes(reader.exactly(2), "big")
    elif n == 127:
        n = int.from_bytes(reader.exactly(8), "big")
    key = reader.exactly(4) if b1 & 0x80 else None
    payload = reader.exactly(n)
    if key:
        payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    return opcode, payload


def ws_once(args, state, seq):
    sock = connect(args.host, args.port, args.timeout)
    echoed = 0
    try:
        key = base64.b64encode(os.urandom(16)).decode()
        send(sock, (f"GET /ws/{seq} HTTP/1.1\r\nHost: {args.host_header}\r\n"
                    "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                    f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        reader = Reader(sock)
        status, headers, _ = read_response(reader)
        if status != 101:
            raise Failed(f"upgrade answered {status}")
        accept = base64.b64encode(hashlib.sha1(key.encode() + WS_GUID).digest()).decode()
        if headers.get("sec-websocket-accept") != accept:
            raise Failed("wrong Sec-WebSocket-Accept")
        for i in range(args.messages):
            text = f"soak {seq}.{i} {random.getrandbits(64):016x}".encode()
            send(sock, ws_frame(0x1, text))
            opcode, payload = ws_read(reader)
            if opcode != 0x1 or payload != text:
                raise Failed(f"message {i}: got opcode {opcode} {payload[:40]!r}")
            echoed += 1
        send(sock, ws_frame(0x8, (1000).to_bytes(2, "big")))
        opcode, payload = ws_read(reader)
        if opcode != 0x8:
            raise Failed(f"close answered with opcode {opcode}")
        rest = reader.to_eof()
        if rest:
            raise Failed(f"{len(rest)} bytes after the close frame")
    except Failed as err:
        raise Failed(f"{err} (after {echoed} of {args.messages} messages)") from err
    finally:
        sock.close()
    return {"messages": echoed}


KINDS = {"h1-close": h1_close_once, "tunnel": keepalive_once, "ws": ws_once}


def worker(args, stats, index, stop):
    run = KINDS[args.kind]
    interval = args.workers / args.rate
    next_at = time.time() + random.random() * interval
    state = {}
    seq = index
    while not stop.is_set():
        wait = next_at - time.time()
        if wait > 0 and stop.wait(wait):
            break
        if time.time() >= args.deadline:
            break
        now = time.time()
        next_at = max(next_at + interval, now - 1.0 + interval)
        start = time.time()
        extra = None
        try:
            extra = run(args, state, seq)
            error = None
        except Failed as err:
            error = err
        except Exception as err:  # a client bug must not stop the soak: count it
            error = f"client error {type(err).__name__}: {err}"
        stats.result(start, error, extra)
        seq += args.workers
    drop(state)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host-header", default="soak.example")
    parser.add_argument("--rate", type=float, required=True, help="requests (ws: sessions) per second")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--messages", type=int, default=10, help="ws: messages per session")
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--deadline", type=float, required=True, help="epoch seconds")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    stats = Stats(args.kind, args.out)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    threads = [threading.Thread(target=worker, args=(args, stats, i, stop), daemon=True)
               for i in range(args.workers)]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        stats.write_summary()
        if stop.wait(5):
            break
        if time.time() > args.deadline + 2 * args.timeout + 5:
            break
    stop.set()
    for thread in threads:
        thread.join(2 * args.timeout + 1)
    stats.write_summary()


if __name__ == "__main__":
    main()
