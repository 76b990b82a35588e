"""Parses an OTLP/JSON file (one ExportTraceServiceRequest a line) with the official protobuf
definitions (the `opentelemetry-proto` package), refusing unknown fields, and prints what the
Rust test checks: per line, its spans (trace id, span id, parent span id, start, end) and links
(trace id, span id), ids in hex, as one JSON object a line. Exits 1 with the line number on a
line that does not parse.

OTLP/JSON differs from protobuf's own JSON mapping in one point: trace and span ids are hex, not
base64. They are turned into base64 (16 and 8 bytes, checked) before protobuf's parser sees
them; everything else is protobuf's."""

import base64
import json
import sys

ID_BYTES = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


def ids_to_base64(node, where):
    if isinstance(node, list):
        for x in node:
            ids_to_base64(x, where)
    elif isinstance(node, dict):
        for k, v in node.items():
            if k in ID_BYTES and isinstance(v, str):
                raw = bytes.fromhex(v)
                if raw and len(raw) != ID_BYTES[k]:
                    raise ValueError(f"{where}: {k} {v!r} is not {ID_BYTES[k]} bytes")
                node[k] = base64.b64encode(raw).decode()
            else:
                ids_to_base64(v, where)

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def main(path):
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            req = ExportTraceServiceRequest()
            try:
                doc = json.loads(line)
                ids_to_base64(doc, f"{path}:{n}")
                json_format.Parse(json.dumps(doc), req)
            except (ValueError, json_format.ParseError) as e:
                print(f"{path}:{n}: {e}", file=sys.stderr)
                return 1
            spans, links = [], []
            for rs in req.resource_spans:
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        spans.append([s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(),
                                      s.start_time_unix_nano, s.end_time_unix_nano])
                        links += [[l.trace_id.hex(), l.span_id.hex()] for l in s.links]
            print(json.dumps({"spans": spans, "links": links}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
