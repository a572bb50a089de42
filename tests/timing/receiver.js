// receiver.js - an OTLP/HTTP trace receiver on loopback, for tests/60-timing.bats.
//
// Independent of profharness: protobuf requests are decoded by the code
// OpenTelemetry JS generates from opentelemetry-proto
// (@opentelemetry/otlp-transformer's generated root); JSON requests are read
// as the OTLP/JSON specification says (lowerCamelCase field names, hex trace
// and span ids, 64-bit integers as strings or numbers), every field name
// checked against that same generated schema, then decoded by it.
//
// usage: node receiver.js PORTFILE OUTFILE [MODE]
//   Listens on 127.0.0.1 (a free port, written to PORTFILE once listening)
//   and appends one JSON line per request to OUTFILE:
//   {path, contentType, headers, resource: {k: v}, scope, spans: [{traceId,
//    spanId, parentSpanId, traceState, name, kind, start, end (ns as strings),
//    attributes: {k: v}, status: {code, message}}]}
//   MODE "fail" answers 500, "hang" never answers; otherwise 200 with an
//   empty ExportTraceServiceResponse.
'use strict';

const fs = require('fs');
const http = require('http');
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root.js');

const P = root.opentelemetry.proto;
const Req = P.collector.trace.v1.ExportTraceServiceRequest;
const Resp = P.collector.trace.v1.ExportTraceServiceResponse;
const [portFile, outFile, mode] = process.argv.slice(2);

const hex = (b) => Buffer.from(b || []).toString('hex');
const long = (v) => (v === undefined || v === null ? undefined : v.toString());

function anyValue(v) {
    if (!v) return null;
    if (v.stringValue !== undefined && v.stringValue !== null && v.stringValue !== '') return v.stringValue;
    if (v.intValue !== undefined && v.intValue !== null && long(v.intValue) !== '0') return Number(long(v.intValue));
    if (v.boolValue) return true;
    if (v.doubleValue) return v.doubleValue;
    return v.stringValue !== undefined ? v.stringValue : null;
}

function kvs(list) {
    const o = {};
    for (const kv of list || []) o[kv.key] = anyValue(kv.value);
    return o;
}

// The field names a message of type T may carry: the generated class's.
function fields(T) {
    return new Set(Object.keys(T.prototype).filter((k) => typeof T.prototype[k] !== 'function'));
}

// OTLP/JSON -> the generated message: names checked, hex ids to bytes.
function fromJson(doc) {
    const unknown = [];
    const check = (obj, T, where) => {
        const ok = fields(T);
        for (const k of Object.keys(obj)) if (!ok.has(k)) unknown.push(`${where}.${k}`);
    };
    check(doc, Req, 'request');
    for (const [i, rs] of (doc.resourceSpans || []).entries()) {
        check(rs, P.trace.v1.ResourceSpans, `resourceSpans[${i}]`);
        if (rs.resource) check(rs.resource, P.resource.v1.Resource, 'resource');
        for (const ss of rs.scopeSpans || []) {
            check(ss, P.trace.v1.ScopeSpans, 'scopeSpans');
            for (const sp of ss.spans || []) {
                check(sp, P.trace.v1.Span, `span ${sp.name}`);
                if (sp.status) check(sp.status, P.trace.v1.Status, `span ${sp.name}.status`);
                for (const k of ['traceId', 'spanId', 'parentSpanId']) {
                    if (sp[k] === undefined) continue;
                    if (!/^[0-9a-f]*$/.test(sp[k])) unknown.push(`span ${sp.name}.${k} is not lowercase hex`);
                    sp[k] = Buffer.from(sp[k], 'hex').toString('base64');
                }
                for (const kv of sp.attributes || []) check(kv.value || {}, P.common.v1.AnyValue, `attribute ${kv.key}`);
            }
        }
    }
    if (unknown.length) throw new Error('not OTLP/JSON: ' + unknown.join(', '));
    return Req.fromObject(doc);
}

function summarise(req, meta) {
    const out = { ...meta, resource: {}, scope: null, spans: [] };
    for (const rs of req.resourceSpans) {
        Object.assign(out.resource, kvs(rs.resource && rs.resource.attributes));
        for (const ss of rs.scopeSpans) {
            out.scope = ss.scope ? { name: ss.scope.name, version: ss.scope.version } : null;
            for (const s of ss.spans) {
                out.spans.push({
                    traceId: hex(s.traceId),
                    spanId: hex(s.spanId),
                    parentSpanId: hex(s.parentSpanId),
                    traceState: s.traceState || '',
                    name: s.name,
                    kind: s.kind,
                    start: long(s.startTimeUnixNano),
                    end: long(s.endTimeUnixNano),
                    attributes: kvs(s.attributes),
                    status: { code: (s.status && s.status.code) || 0, message: (s.status && s.status.message) || '' },
                });
            }
        }
    }
    return out;
}

const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
        if (mode === 'hang') return; // never answer: the client's timeout must end it
        const body = Buffer.concat(chunks);
        const ct = req.headers['content-type'] || '';
        const meta = { path: req.url, method: req.method, contentType: ct, headers: req.headers };
        let line;
        try {
            let decoded;
            if (ct === 'application/x-protobuf') decoded = Req.decode(body);
            else if (ct === 'application/json') decoded = fromJson(JSON.parse(body.toString('utf8')));
            else throw new Error(`unexpected content type ${ct}`);
            line = summarise(decoded, meta);
        } catch (e) {
            line = { ...meta, error: String(e && e.message ? e.message : e) };
        }
        fs.appendFileSync(outFile, JSON.stringify(line) + '\n');
        if (mode === 'fail') {
            res.writeHead(500, { 'Content-Type': 'application/json' });
            res.end('{"code":13,"message":"receiver told to fail"}');
        } else if (ct === 'application/json') {
            res.writeHead(200, { 'Content-Type': 'application/json' });
            res.end('{}');
        } else {
            res.writeHead(200, { 'Content-Type': 'application/x-protobuf' });
            res.end(Buffer.from(Resp.encode(Resp.create({})).finish()));
        }
    });
});

server.listen(0, '127.0.0.1', () => {
    fs.writeFileSync(portFile + '.tmp', String(server.address().port));
    fs.renameSync(portFile + '.tmp', portFile);
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
