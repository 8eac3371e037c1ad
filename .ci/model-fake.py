"""A local language model for .ci/openapi-check: an OpenAI-compatible
`POST /v1/chat/completions` that streams its answer as Chat Completions chunks (what the
assistant's provider client reads, as tests/api/support/model.rs fakes it). The assistant's
turns look a product up and propose adding a unit of its first variant's stock (so the run
has proposals to approve, decline and undo), then answer with a short text; a brand-system
generation gets the current system back, which is a valid answer. Nothing leaves the
machine. Prints its port on the first line."""
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


def first_variant(value):
    """The id of the first variant in a tool's result (JSON text), if any."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, dict):
        for v in value.get("variants") or []:
            if isinstance(v, dict) and v.get("id"):
                return v["id"]
        value = list(value.values())
    if isinstance(value, list):
        for v in value:
            found = first_variant(v) if isinstance(v, (dict, list)) else None
            if found:
                return found
    return None


def tool_call(request):
    """The next tool an assistant turn calls: a product search, then a stock proposal for
    the first variant found; None once proposed (or when the tools are not offered)."""
    messages = request.get("messages") or []
    offered = {(t.get("function") or {}).get("name") for t in request.get("tools") or []}
    if not {"search_products", "adjust_stock"} <= offered:
        return None
    called = [(c.get("function") or {}).get("name")
              for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []]
    if "adjust_stock" in called:
        return None
    if "search_products" not in called:
        return "search_products", {"query": ""}
    for m in reversed(messages):
        if m.get("role") == "tool":
            variant = first_variant(m.get("content"))
            if variant:
                return "adjust_stock", {"variant_id": variant, "delta": 1,
                                        "reason": "A delivery from the supplier"}
    return None


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
            request = json.loads(body)
            call = tool_call(request)
            text = answer(request)
        except ValueError:
            self.send_error(400)
            return
        if call:
            name, args = call
            out = chunk({"role": "assistant", "tool_calls": [{
                "index": 0, "id": f"call_fake_{name}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}}]})
            out += chunk({}, "tool_calls") + b"data: [DONE]\n\n"
        else:
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
