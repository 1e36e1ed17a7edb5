#!/usr/bin/env python3
"""fake_carbon.py PORT_FILE STATE_FILE LOG: the three carbon-intensity APIs
kepler-carbon reads, on one loopback port, answering as their public
documentation shows (the answers below are the docs' examples, with the
value and the time taken from STATE_FILE so that a test can change them):

  Electricity Maps v3: GET /v3/carbon-intensity/latest?zone=DE and
    /history?zone=DE, header auth-token (the docs' example answer:
    {"zone":"DE","carbonIntensity":302,"datetime":"2018-04-25T18:07:00.350Z",
    "updatedAt":"2018-04-25T18:07:01.000Z"}); 401 without the token.
  UK Carbon Intensity API: GET /intensity ({"data":[{"from":..., "to":...,
    "intensity":{"forecast":266,"actual":263,"index":"moderate"}}]}) and
    GET /regional/regionid/N (the region, its data[] with forecasts only).
  WattTime v3: GET /login with basic auth gives {"token": ...}; GET
    /v3/forecast?region=R&signal_type=co2_moer with "Authorization: Bearer"
    ({"data":[{"point_time":..., "value":..., "version":...}],
    "meta":{"region":..., "signal_type":..., "units":"lbs_co2_per_mwh", ...}});
    401 with a stale token (STATE "expire": the next token is refused once).

STATE_FILE is JSON: {"mode": M, "value": V, "time": T}. M "ok" answers as
above; the hostile modes answer each endpoint with: "500", "garbage" (not
JSON), "truncated", "string" (the value as a string), "negative", "huge"
(1e308), "empty" (no values), "deep" (10,000 nested arrays), "big" (2 MiB),
"slow" (sleeps 5 s), "units" (WattTime in kg_per_mwh), "close" (closes the
connection). Every request is logged to LOG as "METHOD PATH".
"""
import base64
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

port_file, state_file, log_file = sys.argv[1:4]
TOKEN = "emaps-secret"
WT_USER, WT_PASS = "kepler", "wt-password"
tokens = {"n": 0, "refuse": set()}
lock = threading.Lock()


def state():
    try:
        with open(state_file) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {"mode": "ok", "value": 302, "time": "2018-04-25T18:07:00.350Z"}


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, body, ctype="application/json"):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def hostile(self, st, good):
        m = st.get("mode", "ok")
        if m == "ok":
            return self.send(200, json.dumps(good))
        if m == "500":
            return self.send(500, '{"error":"Internal Server Error"}')
        if m == "garbage":
            return self.send(200, "<html>Service temporarily unavailable</html>", "text/html")
        if m == "truncated":
            return self.send(200, json.dumps(good)[:25])
        if m == "deep":
            return self.send(200, "[" * 10000 + "]" * 10000)
        if m == "big":
            return self.send(200, '{"pad":"' + "x" * (2 << 20) + '"}')
        if m == "slow":
            time.sleep(5)
            return self.send(200, json.dumps(good))
        if m == "close":
            self.connection.shutdown(socket.SHUT_RDWR)
            return None
        # the value replaced by something that is not an intensity
        bad = {"string": str(st["value"]), "negative": -st["value"], "huge": 1e308}.get(m)
        text = json.dumps(good)
        if m == "empty":
            keys = [k for k in ("history", "data") if k in good]
            return self.send(200, json.dumps(dict(good, **{k: [] for k in keys}) if keys else {}))
        if m == "units":
            return self.send(200, text.replace("lbs_co2_per_mwh", "kg_per_mwh"))
        if bad is not None:
            return self.send(200, text.replace(json.dumps(st["value"]), json.dumps(bad)))
        return self.send(200, text)

    def do_GET(self):
        with open(log_file, "a") as f:
            f.write(f"GET {self.path}\n")
        st = state()
        u = urlparse(self.path)
        q = parse_qs(u.query)
        v, t = st["value"], st["time"]
        if u.path.startswith("/v3/carbon-intensity/"):
            if self.headers.get("auth-token") != TOKEN:
                return self.send(401, '{"error":"Invalid auth-token"}')
            one = {"zone": q.get("zone", [""])[0], "carbonIntensity": v, "datetime": t,
                   "updatedAt": t, "createdAt": t, "emissionFactorType": "lifecycle",
                   "isEstimated": bool(st.get("estimated")), "estimationMethod": None}
            if u.path.endswith("/latest"):
                return self.hostile(st, one)
            if u.path.endswith("/history"):
                earlier = dict(one, datetime="2018-04-25T17:00:00.000Z", carbonIntensity=v + 10, isEstimated=True,
                               estimationMethod="TIME_SLICER_AVERAGE")
                return self.hostile(st, {"zone": one["zone"], "history": [earlier, one]})
        if u.path == "/intensity":
            return self.hostile(st, {"data": [{"from": t, "to": t, "intensity": {
                "forecast": v + 3, "actual": v, "index": "moderate"}}]})
        if u.path.startswith("/regional/regionid/"):
            rid = int(u.path.rsplit("/", 1)[1])
            return self.hostile(st, {"data": [{"regionid": rid, "dnoregion": "Electricity North West",
                                               "shortname": "North West England", "data": [
                                                   {"from": t, "to": t, "intensity": {"forecast": v, "index": "moderate"},
                                                    "generationmix": [{"fuel": "gas", "perc": 43.6},
                                                                      {"fuel": "wind", "perc": 56.4}]}]}]})
        if u.path == "/login":
            auth = self.headers.get("Authorization", "")
            if auth != "Basic " + base64.b64encode(f"{WT_USER}:{WT_PASS}".encode()).decode():
                return self.send(403, '{"error":"Unauthorized"}')
            with lock:
                tokens["n"] += 1
                tok = f"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJrZXBsZXIifQ.sig{tokens['n']}"
                if st.get("expire") and tokens["n"] == 1:
                    tokens["refuse"].add(tok)  # as if it expired at once: refused on use
            return self.send(200, json.dumps({"token": tok}))
        if u.path == "/v3/forecast":
            tok = self.headers.get("Authorization", "")[len("Bearer "):]
            if not tok.startswith("eyJ") or tok in tokens["refuse"]:
                return self.send(401, '{"error":"token expired"}')
            return self.hostile(st, {"data": [{"point_time": t, "value": v, "version": "2026-03-01"}],
                                     "meta": {"region": q.get("region", [""])[0],
                                              "signal_type": q.get("signal_type", [""])[0],
                                              "model": {"date": "2026-03-01"}, "units": "lbs_co2_per_mwh",
                                              "generated_at": t}})
        return self.send(404, '{"error":"not found"}')


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os  # noqa: E402

os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
