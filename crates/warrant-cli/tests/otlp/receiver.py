"""A real OTLP/HTTP traces receiver for the trace tests (crates/warrant-cli/tests/it/traces.rs).

It decodes each POST /v1/traces body as an ExportTraceServiceRequest with the official
`opentelemetry-proto` classes, as a collector would, and appends every span to OUT/spans.jsonl
as one JSON object (ids in hex, attributes as plain values, the resource's attributes beside),
and each raw body to OUT/raw.bin, so that a test can look for words in what was sent at all.
The first line of standard output is the port it listens on. Usage: receiver.py OUT
"""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = sys.argv[1]


def value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind) if kind else None


def attributes(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path != "/v1/traces" or self.headers.get("content-type") != "application/x-protobuf":
            self.send_error(404 if self.path != "/v1/traces" else 415)
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        lines = []
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    lines.append(json.dumps({
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": span.kind,
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                        "attributes": attributes(span.attributes),
                        "events": [{"name": e.name, "attributes": attributes(e.attributes)} for e in span.events],
                        "status": {"code": span.status.code, "message": span.status.message},
                        "scope": scope_spans.scope.name,
                        "resource": resource,
                    }))
        with open(os.path.join(OUT, "raw.bin"), "ab") as raw:
            raw.write(body)
        # Whole lines only: a reader polling the file never sees half a span.
        with open(os.path.join(OUT, "spans.jsonl"), "a") as spans:
            spans.write("".join(line + "\n" for line in lines))
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
