#!/usr/bin/env python3
"""stall-proxy.py - the real Docker Engine behind a unix socket, except
that a container's archive stalls: for tests/37-engine-stall.bats.

    stall-proxy.py LISTEN_SOCKET ENGINE_SOCKET STATE_DIR

Every request is passed to the Engine with "Connection: close" (so each
new request comes on a new connection and is looked at), and the answer
relayed until the Engine closes.  When STATE_DIR/mode holds "stall", a
GET .../archive gets the Engine's status line, headers and first body
bytes, then nothing more (the connection is held open); STATE_DIR/stalled
is touched when that happens, so a test can wait for it.  "drip" sends
the rest one byte every 5 s.  Anything else: plain relay.  The test
stops it by its pid.
"""
import os
import socket
import socketserver
import sys
import threading
import time

LISTEN, ENGINE, STATE = sys.argv[1], sys.argv[2], sys.argv[3]


def mode():
    try:
        with open(os.path.join(STATE, "mode")) as f:
            return f.read().strip()
    except OSError:
        return "pass"


def read_head(sock, buf):
    while b"\r\n\r\n" not in buf:
        data = sock.recv(65536)
        if not data:
            return None, buf
        buf += data
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head, rest


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        client = self.request
        head, rest = read_head(client, b"")
        if head is None:
            return
        lines = head.split(b"\r\n")
        method, path = lines[0].split(b" ")[:2]
        kept = [l for l in lines[1:] if not l.lower().startswith(b"connection:")]
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.connect(ENGINE)
        upstream.sendall(b"\r\n".join([lines[0]] + kept + [b"Connection: close"]) + b"\r\n\r\n" + rest)
        # The rest of the request body, if any, goes on as it comes.
        threading.Thread(target=self.pump, args=(client, upstream), daemon=True).start()
        stalling = method == b"GET" and path.split(b"?")[0].endswith(b"/archive") and mode() in ("stall", "drip")
        try:
            if not stalling:
                while True:
                    data = upstream.recv(65536)
                    if not data:
                        break
                    client.sendall(data)
                return
            head, rest = read_head(upstream, b"")
            if head is None:
                return
            client.sendall(head + b"\r\n\r\n" + rest[:600])
            rest = rest[600:]
            open(os.path.join(STATE, "stalled"), "w").close()
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                if mode() == "drip" and rest:
                    client.sendall(rest[:1])
                    rest = rest[1:]
                    time.sleep(5)
                else:
                    time.sleep(0.2)
        except OSError:
            pass
        finally:
            upstream.close()

    @staticmethod
    def pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


if os.path.exists(LISTEN):
    os.unlink(LISTEN)
server = Server(LISTEN, Handler)
print("ready", flush=True)
server.serve_forever()
