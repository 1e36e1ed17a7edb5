#!/usr/bin/env python3
"""http_sink.py PORT: an HTTP/1.1 receiver on 127.0.0.1:PORT that takes every
POST (its body read and dropped) with 200 and no body: the cheapest receiver
kepler-push can send to, for the benchmarks that measure kepler-push alone
(tests/bench/bench_push.sh, tools/bench-push-ab.sh). Not a test."""
import http.server
import sys


class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        while n > 0:
            n -= len(self.rfile.read(min(n, 1 << 20)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
