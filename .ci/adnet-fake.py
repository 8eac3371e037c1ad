"""A local ad network for .ci/openapi-check: the catalog API our adapter speaks
(`POST /catalogs/{catalog_id}/items_batch`, a bearer token, `{"items": [...]}`; any 2xx is
success, README "Ad-network catalog"). It accepts every batch and keeps none. Prints its
port on the first line."""
import http.server
import json
import re

BATCH = re.compile(r"^/catalogs/[^/]+/items_batch$")


class Adnet(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, doc):
        out = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if not BATCH.match(self.path):
            self.reply(404, {"error": "no such endpoint"})
            return
        if not (self.headers.get("authorization") or "").startswith("Bearer "):
            self.reply(401, {"error": "no token"})
            return
        try:
            items = json.loads(body).get("items") or []
        except (ValueError, AttributeError):
            self.reply(400, {"error": "not JSON"})
            return
        self.reply(200, {"handles": [str(i) for i in range(len(items))]})


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that hung up early (a cancelled request) is not news


if __name__ == "__main__":
    server = Server(("127.0.0.1", 0), Adnet)
    print(server.server_address[1], flush=True)
    server.serve_forever()
