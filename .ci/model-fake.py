"""A local language model for .ci/openapi-check: an OpenAI-compatible
`POST /v1/chat/completions` that streams its answer as Chat Completions chunks (what the
assistant's provider client reads, as tests/api/support/model.rs fakes it). The assistant's
turns get a short text; a brand-system generation gets the current system back, which is a
valid answer. Nothing leaves the machine. Prints its port on the first line."""
import http.server
import json

BRAND = "You design brand systems"


def answer(request):
    messages = request.get("messages") or []
    system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    if system.startswith(BRAND):
        user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        # "Current brand system:\n{json}\n\nRequest: ..." -> the JSON, unchanged.
        start, end = user.find("{"), user.rfind("\n\nRequest:")
        if start >= 0 and end > start:
            return user[start:end]
    return "Done. (An answer from the check's local model.)"


def chunk(delta, finish=None):
    c = {"id": "chatcmpl-1", "object": "chat.completion.chunk",
         "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(c)}\n\n".encode()


class Model(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path.rstrip("/") != "/v1/chat/completions":
            self.send_error(404)
            return
        try:
            text = answer(json.loads(body))
        except ValueError:
            self.send_error(400)
            return
        # Streamed in two pieces, as real servers stream deltas.
        half = len(text) // 2
        out = chunk({"role": "assistant", "content": text[:half]}) + chunk({"content": text[half:]})
        out += chunk({}, "stop") + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that hung up early (a cancelled request) is not news


if __name__ == "__main__":
    server = Server(("127.0.0.1", 0), Model)
    print(server.server_address[1], flush=True)
    server.serve_forever()
