#!/usr/bin/env python3
"""fake-engine.py - a Docker Engine that misbehaves on purpose, for the
unit tests of the transport (tests/unit/test_engine_stream.c,
test_engine_tls.c).

    fake-engine.py unix PATH             serve on a unix socket
    fake-engine.py tls CERT KEY          serve TLS on 127.0.0.1, a free port

It prints "ready" (unix) or "ready PORT" (tls) once it accepts.  What a
request gets depends on the container name in its path:

    GET  .../containers/stall/archive    a 10 GB promise, one 512-byte block, then nothing
    GET  .../containers/drip/archive     a 10 GB promise, then one byte every 2 s
    GET  .../containers/endless/archive  a 10 GB promise, 4 KiB every 10 ms
    GET  .../containers/NAME/json        a container without a TTY
    GET  .../containers/endless/logs     framed output without end
    GET  .../containers/hdrcut/logs      one frame, then 4 bytes of the next header
    POST .../containers/slow/wait        silence for 4 s, then {"StatusCode": 0}
    GET  /_ping                          OK, API 1.41

Anything else is a 404 in the Engine's words.  It never outlives its
parent by long: every connection ends after 120 s.
"""
import os
import socket
import socketserver
import ssl
import sys
import threading
import time

TEN_GB = 10 << 30


def reply(sock, status, body, ctype="application/json", extra=""):
    head = "HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s\r\n" % (status, ctype, len(body), extra)
    sock.sendall(head.encode() + body)


def promise(sock, ctype, length=TEN_GB):
    sock.sendall(("HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n" % (ctype, length)).encode())


def frame(stream, payload):
    return bytes([stream, 0, 0, 0]) + len(payload).to_bytes(4, "big") + payload


def serve_one(sock, method, path):
    """Answer one request; False when the connection is done."""
    deadline = time.monotonic() + 120
    name = path.split("/containers/", 1)[1].split("/", 1)[0] if "/containers/" in path else ""
    if path == "/_ping":
        reply(sock, 200, b"OK", "text/plain", "Api-Version: 1.41\r\n")
    elif path.split("?")[0].endswith("/archive") and name == "stall":
        promise(sock, "application/x-tar")
        sock.sendall(b"\0" * 512)
        while time.monotonic() < deadline:
            time.sleep(0.2)
        return False
    elif path.split("?")[0].endswith("/archive") and name == "drip":
        promise(sock, "application/x-tar")
        while time.monotonic() < deadline:
            sock.sendall(b"\0")
            time.sleep(2)
        return False
    elif path.split("?")[0].endswith("/archive") and name == "endless":
        promise(sock, "application/x-tar")
        while time.monotonic() < deadline:
            sock.sendall(b"\0" * 4096)
            time.sleep(0.01)
        return False
    elif method == "GET" and path.split("?")[0].endswith("/containers/%s/json" % name) and name:
        reply(sock, 200, b'{"Id":"%s","Config":{"Tty":false}}' % name.encode())
    elif path.split("?")[0].endswith("/logs") and name == "endless":
        promise(sock, "application/vnd.docker.raw-stream")
        chunk = frame(1, b"x" * 65535 + b"\n")
        while time.monotonic() < deadline:
            sock.sendall(chunk)
        return False
    elif path.split("?")[0].endswith("/logs") and name == "hdrcut":
        body = frame(1, b"hello\n") + bytes([1, 0, 0, 0])
        reply(sock, 200, body, "application/vnd.docker.raw-stream")
    elif method == "POST" and path.split("?")[0].endswith("/wait") and name == "slow":
        time.sleep(4)
        reply(sock, 200, b'{"StatusCode":0}')
    else:
        reply(sock, 404, b'{"message":"fake: no route %s"}' % path.encode())
    return True


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        sock = self.request
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                length = 0
                for line in lines[1:]:
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                while len(buf) < length:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buf += data
                buf = buf[length:]
                if not serve_one(sock, method, path):
                    return
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            return


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class TLSServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, handler, ctx):
        self.ctx = ctx
        super().__init__(addr, handler)

    def get_request(self):
        sock, addr = self.socket.accept()
        return self.ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def handle_error(self, request, client_address):
        pass  # a refused handshake is what the tests want


def main():
    if sys.argv[1] == "unix":
        path = sys.argv[2]
        if os.path.exists(path):
            os.unlink(path)
        server = UnixServer(path, Handler)
        print("ready", flush=True)
    else:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[2], sys.argv[3])
        server = TLSServer(("127.0.0.1", 0), Handler, ctx)
        print("ready %d" % server.server_address[1], flush=True)
    # Gone with its parent: stdin is the parent's pipe.
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
