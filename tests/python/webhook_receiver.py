"""A webhook receiver over HTTPS for the tests of webhook delivery (the MCP Events extension, SEP-3415), started by
tests/common/webhooks.rs. Signatures are checked with the Standard Webhooks project's own library (PyPI
`standardwebhooks`), never with the code under test.

    webhook_receiver.py --cert PEM --key PEM --port-file PATH --secret whsec_... [--secret whsec_...]

Listens on 127.0.0.1, on a port the system picks, and writes that port to the port file once listening (written
under a temporary name, then renamed: a reader never sees half of it).

- `POST /_control` with a JSON object sets how it answers; every key is optional and merged into what is set:
  `"statuses": {"<webhook-id>": [500, 410, ...]}`, the statuses to answer, in order, to the deliveries with that
  `webhook-id` (200 once they run out); `"challenge": "echo" | "wrong" | "status:NNN"`, how to answer a verification
  envelope (`echo` until told); `"default_status": NNN` (200 until told). Answers 204.
- `GET /_received` answers the list of every other POST received, in order, each `{"path", "headers", "body", "raw",
  "verified", "status"}` (`headers`: the Standard Webhooks ones, `x-mcp-subscription-id` and `content-type`, null
  where missing; `body`: the parsed JSON, else the raw text).
- Any other POST is verified against each secret (accepted if one verifies; the library's own timestamp tolerance
  applies). Not verified: 401. A verified body of `"type": "verification"` is answered as `challenge` says: `echo`,
  200 with `{"challenge": <its challenge>}`; `wrong`, 200 with `{"challenge": "not-it"}`; `status:NNN`, that status.
  Any other verified delivery: the next status listed for its `webhook-id`, else the default one, with `{}`.

Writes nothing to stdout; errors go to stderr.
"""

import argparse
import json
import os
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

# The headers each received delivery is recorded with.
RECORDED_HEADERS = (
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "x-mcp-subscription-id",
    "content-type",
)


class State:
    """What the receiver was told (`/_control`) and what it received, behind one lock."""

    def __init__(self, secrets):
        self.lock = threading.Lock()
        self.webhooks = [Webhook(secret) for secret in secrets]
        self.statuses = {}
        self.challenge = "echo"
        self.default_status = 200
        self.received = []

    def control(self, settings):
        with self.lock:
            for webhook_id, statuses in (settings.get("statuses") or {}).items():
                self.statuses[webhook_id] = [int(status) for status in statuses]
            if "challenge" in settings:
                self.challenge = str(settings["challenge"])
            if "default_status" in settings:
                self.default_status = int(settings["default_status"])

    def verified(self, raw, headers):
        """Whether one of the secrets verifies this body and these headers."""
        for webhook in self.webhooks:
            try:
                webhook.verify(raw, headers, json_parse=False)
                return True
            except WebhookVerificationError:
                continue
        return False

    def next_status(self, webhook_id):
        with self.lock:
            listed = self.statuses.get(webhook_id)
            if listed:
                return listed.pop(0)
            return self.default_status

    def challenge_answer(self, body):
        """The status and body answering a verification envelope."""
        with self.lock:
            mode = self.challenge
        if mode == "wrong":
            return 200, {"challenge": "not-it"}
        if mode.startswith("status:"):
            return int(mode[len("status:"):]), {}
        challenge = body.get("challenge") if isinstance(body, dict) else None
        return 200, {"challenge": challenge}

    def record(self, entry):
        with self.lock:
            self.received.append(entry)

    def snapshot(self):
        with self.lock:
            return list(self.received)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "webhook-receiver"

    def log_message(self, format, *args):
        # Quiet access log.
        pass

    def read_body(self):
        """The request body, by `Content-Length` or chunked."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    # Trailers, up to the blank line.
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def answer(self, status, body=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data:
            self.wfile.write(data)

    def do_GET(self):
        if self.path == "/_received":
            self.answer(200, self.server.state.snapshot())
        else:
            self.answer(404, {})

    def do_POST(self):
        state = self.server.state
        raw = self.read_body()
        if self.path == "/_control":
            try:
                settings = json.loads(raw)
            except ValueError as e:
                self.answer(400, {"error": str(e)})
                return
            state.control(settings)
            self.answer(204)
            return
        text = raw.decode("utf-8", errors="replace")
        try:
            body = json.loads(raw)
        except ValueError:
            body = text
        headers = {name: value for name, value in self.headers.items()}
        verified = state.verified(raw, headers)
        if not verified:
            status, answer = 401, {}
        elif isinstance(body, dict) and body.get("type") == "verification":
            status, answer = state.challenge_answer(body)
        else:
            status, answer = state.next_status(self.headers.get("webhook-id")), {}
        state.record(
            {
                "path": self.path,
                "headers": {name: self.headers.get(name) for name in RECORDED_HEADERS},
                "body": body,
                "raw": text,
                "verified": verified,
                "status": status,
            }
        )
        self.answer(status, answer)


class Server(ThreadingHTTPServer):
    """Serves HTTPS: each connection's TLS handshake runs on its own thread, so a slow client holds up no other."""

    daemon_threads = True

    def __init__(self, context, state):
        super().__init__(("127.0.0.1", 0), Handler)
        self.context = context
        self.state = state

    def finish_request(self, request, client_address):
        request.settimeout(30)
        tls = self.context.wrap_socket(request, server_side=True)
        try:
            super().finish_request(tls, client_address)
        finally:
            tls.close()

    def handle_error(self, request, client_address):
        error = sys.exc_info()[1]
        # A client that goes away, or refuses our certificate, is no error of the receiver's.
        if isinstance(error, (ssl.SSLError, ConnectionError, TimeoutError)):
            return
        print(f"webhook_receiver: {client_address}: {error!r}", file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--secret", action="append", required=True)
    args = parser.parse_args()

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server = Server(context, State(args.secret))

    partial = f"{args.port_file}.tmp"
    with open(partial, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(partial, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
