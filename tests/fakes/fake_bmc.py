#!/usr/bin/env python3
# A BMC for the tests: HTTPS (a test CA's certificate) serving Redfish
# documents in the DMTF schemas' shape: the service root, SessionService
# login (POST .../Sessions with UserName and Password: 201, X-Auth-Token and
# Location), the Chassis collection, one Chassis linking EnvironmentMetrics
# (PowerWatts.Reading) and the legacy Power (PowerControl[].PowerConsumedWatts),
# or only Power with "legacy". Every GET needs a live token.
# The watts it serves follow a known sequence, one value per power
# document served, each logged as "served N W" to stdout. Its behaviour
# comes from a mode file, read at every request:
#   ok       answer
#   slow     answer after 2 s
#   expire   forget every session (the next GET is 401), then behave as ok
#   500      HTTP 500 to every GET
#   garbage  200 with a body that is not JSON
#   hang     answer nothing for 30 s
#   steady   answer, always 250 W
# Usage: fake_bmc.py PORT CERT KEY USER PASSWORD MODE_FILE [legacy]
import http.server
import json
import secrets
import ssl
import sys
import threading
import time

port, cert, key, user, password, mode_file = sys.argv[1:7]
legacy = len(sys.argv) > 7 and sys.argv[7] == "legacy"
WATTS = [212.5, 250.0, 301.25, 180.0, 275.5, 333.0, 199.75, 260.0]
state = {"tokens": set(), "served": 0, "logins": 0}
lock = threading.Lock()


def mode():
    try:
        with open(mode_file) as f:
            return f.read().strip()
    except OSError:
        return "ok"


class BMC(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, code, body, headers=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        try:
            creds = json.loads(self.rfile.read(n))
        except ValueError:
            return self.send(400, {"error": "bad JSON"})
        if self.path != "/redfish/v1/SessionService/Sessions":
            return self.send(404, {"error": "not found"})
        if creds.get("UserName") != user or creds.get("Password") != password:
            return self.send(401, {"error": "bad credentials"})
        tok = secrets.token_hex(16)
        with lock:
            state["tokens"].add(tok)
            state["logins"] += 1
            print(f"login {state['logins']}", flush=True)
        self.send(201, {"@odata.id": "/redfish/v1/SessionService/Sessions/1", "UserName": user},
                  [("X-Auth-Token", tok), ("Location", "/redfish/v1/SessionService/Sessions/1")])

    def do_GET(self):
        m = mode()
        if m == "hang":
            time.sleep(30)
            return
        if m == "slow":
            time.sleep(2)
        if m == "expire":
            with lock:
                state["tokens"].clear()
            with open(mode_file, "w") as f:
                f.write("ok")
        with lock:
            ok = self.headers.get("X-Auth-Token") in state["tokens"]
        if not ok:
            return self.send(401, {"error": "no session"})
        if m == "500":
            return self.send(500, {"error": "internal"})
        if m == "garbage":
            return self.send(200, b"\x00\xff<html>not json")
        p = self.path
        if p == "/redfish/v1/Chassis":
            return self.send(200, {"@odata.id": p, "Members": [{"@odata.id": "/redfish/v1/Chassis/1U"}],
                                   "Members@odata.count": 1})
        if p == "/redfish/v1/Chassis/1U":
            doc = {"@odata.id": p, "Id": "1U", "ChassisType": "RackMount",
                   "Power": {"@odata.id": "/redfish/v1/Chassis/1U/Power"}}
            if not legacy:
                doc["EnvironmentMetrics"] = {"@odata.id": "/redfish/v1/Chassis/1U/EnvironmentMetrics"}
                doc["PowerSubsystem"] = {"@odata.id": "/redfish/v1/Chassis/1U/PowerSubsystem"}
            return self.send(200, doc)
        if p in ("/redfish/v1/Chassis/1U/EnvironmentMetrics", "/redfish/v1/Chassis/1U/Power"):
            with lock:
                w = 250.0 if m == "steady" else WATTS[state["served"] % len(WATTS)]
                state["served"] += 1
            print(f"served {w} W", flush=True)
            if p.endswith("Power"):
                return self.send(200, {"@odata.id": p, "PowerControl": [
                    {"MemberId": "0", "PowerConsumedWatts": w, "PowerMetrics": {"AverageConsumedWatts": w}}]})
            return self.send(200, {"@odata.id": p, "PowerWatts": {"Reading": w}})
        return self.send(404, {"error": "not found"})


srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), BMC)
srv.daemon_threads = True
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
