"""A local SMTP server that accepts every message and keeps none, for .ci/openapi-check:
the API's mail-sending operations then answer as they do with a working relay."""
import socketserver
import sys


class Sink(socketserver.StreamRequestHandler):
    def reply(self, line):
        self.wfile.write(line.encode() + b"\r\n")

    def handle(self):
        self.reply("220 sink ESMTP")
        while True:
            line = self.rfile.readline()
            if not line:
                return
            verb = line[:4].upper()
            if verb in (b"EHLO", b"HELO"):
                self.reply("250 sink")
            elif verb == b"DATA":
                self.reply("354 go on")
                while self.rfile.readline() not in (b".\r\n", b".\n", b""):
                    pass
                self.reply("250 kept nowhere")
            elif verb == b"QUIT":
                self.reply("221 bye")
                return
            else:
                self.reply("250 ok")


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


if __name__ == "__main__":
    with Server(("127.0.0.1", 0), Sink) as server:
        print(server.server_address[1], flush=True)
        server.serve_forever()
