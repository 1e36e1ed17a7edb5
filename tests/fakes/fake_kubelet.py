#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in for the kubelet's read-only API as kepler-collectd uses it:
GET /pods over HTTPS with "Authorization: Bearer <token>", answered with a
v1 PodList (the file PODLIST, re-read on every request) or, as the real
kubelet does, 401 "Unauthorized" for a missing or wrong token.

The token it accepts is the content of TOKEN_FILE, re-read on every request
(a test rotates it as projected service-account tokens rotate). The word in
MODE_FILE, re-read on every request, makes it misbehave:
  ok       the PodList
  slow     the PodList after 10 s
  401      401 whatever the token
  500      500 Internal Server Error
  garbage  200 with bytes that are not JSON
  huge     200 with 100 MB of JSON-looking bytes, no Content-Length
  hang     accepts, reads the request, never answers
Each request is logged to stdout: time, path, whether the token matched, mode.

Usage: fake_kubelet.py PORT CERT KEY PODLIST TOKEN_FILE MODE_FILE
"""
import http.server
import ssl
import sys
import threading
import time

port, cert, key, podlist, token_file, mode_file = sys.argv[1:7]


def read(path, default=""):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return default.encode()


class Kubelet(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def answer(self, code, body, ctype="application/json", length=True):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        if length:
            self.send_header("Content-Length", str(len(body)))
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        mode = read(mode_file, "ok").decode().strip() or "ok"
        want = read(token_file).decode().strip()
        got = self.headers.get("Authorization", "")
        authorized = bool(want) and got == "Bearer " + want
        print("%.3f %s token=%s mode=%s" % (time.time(), self.path, "ok" if authorized else "bad", mode),
              flush=True)
        if self.path != "/pods":
            return self.answer(404, b"404 page not found\n", "text/plain; charset=utf-8")
        if mode == "401" or not authorized:
            return self.answer(401, b"Unauthorized\n", "text/plain; charset=utf-8")
        if mode == "500":
            return self.answer(500, b"Internal Server Error\n", "text/plain; charset=utf-8")
        if mode == "garbage":
            return self.answer(200, b"\x00\xff{\"items\": [ {\"metadata\": ]]]\n")
        if mode == "hang":
            threading.Event().wait(3600)
            return None
        if mode == "huge":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.close_connection = True
            self.end_headers()
            chunk = b'{"items": [' + b" " * (1 << 20)
            try:
                for _ in range(100):
                    self.wfile.write(chunk)
            except OSError:
                pass
            return None
        if mode == "slow":
            time.sleep(10)
        try:
            return self.answer(200, read(podlist))
        except OSError:
            return None


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server(("127.0.0.1", int(port)), Kubelet)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
print("listening on 127.0.0.1:%s" % port, flush=True)
server.serve_forever()
