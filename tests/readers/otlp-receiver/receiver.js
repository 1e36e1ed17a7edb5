// SPDX-License-Identifier: Apache-2.0
// An OTLP/HTTP metrics receiver for tests/readers/test_push_otlp.sh. Each
// POST /v1/metrics is (gunzipped when Content-Encoding says gzip, then) decoded with OpenTelemetry's own definitions (the
// protobufjs code generated from opentelemetry-proto that
// @opentelemetry/otlp-transformer 0.57 ships) and written as one JSON line
// (the request, its headers) to OUT. MODE_FILE says how to answer: ok (200,
// an empty ExportMetricsServiceResponse), 503, 429 (Retry-After: 1), 400, or
// partial (200 with a partial_success rejecting 3 data points). With
// TLS_KEY, TLS_CERT and TLS_CA set it serves HTTPS and asks for a client
// certificate signed by TLS_CA. It listens on PORT (else a free port),
// written to PORT_FILE once it listens.
// Usage: [PORT=N] node receiver.js PORT_FILE OUT MODE_FILE
"use strict";
const fs = require("fs");
const http = require("http");
const https = require("https");
const zlib = require("zlib");
const root = require("@opentelemetry/otlp-transformer/build/src/generated/root");

const svc = root.opentelemetry.proto.collector.metrics.v1;
const [portFile, out, modeFile] = process.argv.slice(2);

function handle(req, res) {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const mode = fs.existsSync(modeFile) ? fs.readFileSync(modeFile, "utf8").trim() : "ok";
    if (req.method !== "POST" || req.url !== "/v1/metrics") {
      res.writeHead(404).end();
      return;
    }
    if (mode === "503" || mode === "429") {
      res.writeHead(Number(mode), mode === "429" ? { "Retry-After": "1" } : {}).end();
      return;
    }
    let line;
    try {
      let body = Buffer.concat(chunks);
      if (req.headers["content-encoding"] === "gzip")
        body = zlib.gunzipSync(body);
      const msg = svc.ExportMetricsServiceRequest.decode(body);
      const obj = svc.ExportMetricsServiceRequest.toObject(msg, { longs: String, enums: String, defaults: true, oneofs: true });
      line = { request: obj, headers: req.headers, client: req.socket.getPeerCertificate ? (req.socket.getPeerCertificate().subject || {}).CN || "" : "" };
    } catch (e) {
      line = { error: String(e), headers: req.headers };
    }
    if (mode !== "400")
      fs.appendFileSync(out, JSON.stringify(line) + "\n");
    if (line.error || mode === "400") {
      res.writeHead(400, { "Content-Type": "text/plain" }).end(line.error || "refused");
      return;
    }
    let body = Buffer.alloc(0);
    if (mode === "partial")
      body = Buffer.from(svc.ExportMetricsServiceResponse.encode({ partialSuccess: { rejectedDataPoints: 3, errorMessage: "three points refused by the test" } }).finish());
    res.writeHead(200, { "Content-Type": "application/x-protobuf" }).end(body);
  });
}

const tls = process.env.TLS_KEY
  ? { key: fs.readFileSync(process.env.TLS_KEY), cert: fs.readFileSync(process.env.TLS_CERT), ca: fs.readFileSync(process.env.TLS_CA), requestCert: true, rejectUnauthorized: true }
  : null;
const server = tls ? https.createServer(tls, handle) : http.createServer(handle);
server.listen(Number(process.env.PORT || 0), "127.0.0.1", () => fs.writeFileSync(portFile, String(server.address().port)));
