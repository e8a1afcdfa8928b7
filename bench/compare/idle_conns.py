#!/usr/bin/env python3
"""Open N keep-alive connections to a proxy, send one request on each, then hold them idle.

Used by run.sh for the "memory per idle connection" scenario: each connection has done
a full exchange (so the proxy has set up whatever per-connection HTTP and TLS state it
keeps) and then sits idle while run.sh reads the proxy's RSS. Python's standard library
is enough here (TLS included), which keeps the bench crate free of a TLS client.

usage: idle_conns.py HOST PORT COUNT plain|tls READY_FILE HOLD_SECONDS

Writes "ready <opened> <failed>" to READY_FILE once every connection is idle, then
sleeps HOLD_SECONDS (or until killed) and closes them all.
"""

import socket
import ssl
import sys
import time


def read_response(sock):
    """Reads one HTTP/1.1 response (Content-Length or chunked); False if it broke off."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return False
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    if not lines[0].startswith("HTTP/1.1 2"):
        return False
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip().lower()
    if "content-length" in headers:
        want = int(headers["content-length"])
        while len(body) < want:
            chunk = sock.recv(65536)
            if not chunk:
                return False
            body += chunk
        return True
    if headers.get("transfer-encoding") == "chunked":
        while not body.endswith(b"0\r\n\r\n"):
            chunk = sock.recv(65536)
            if not chunk:
                return False
            body += chunk
        return True
    return False


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    host, port, count, mode, ready_file, hold = sys.argv[1:]
    port, count, hold = int(port), int(count), float(hold)
    context = None
    if mode == "tls":
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.set_alpn_protocols(["http/1.1"])
    request = (
        f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: culvert-bench-idle\r\n\r\n"
    ).encode()
    conns, failed = [], 0
    for _ in range(count):
        try:
            sock = socket.create_connection((host, port), timeout=10)
            if context is not None:
                sock = context.wrap_socket(sock, server_hostname="bench.localhost")
            sock.sendall(request)
            if read_response(sock):
                conns.append(sock)
            else:
                failed += 1
                sock.close()
        except OSError:
            failed += 1
    with open(ready_file, "w", encoding="ascii") as out:
        out.write(f"ready {len(conns)} {failed}\n")
    time.sleep(hold)
    for sock in conns:
        sock.close()


if __name__ == "__main__":
    main()
