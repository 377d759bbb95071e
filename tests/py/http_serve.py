# An HTTP server (python's http.server) on 127.0.0.1:argv[1] (0: any free
# port) answering every GET with argv[2]; prints `port: N` once listening.
import http.server
import sys

body = sys.argv[2].encode()


class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), Answer)
print('port:', server.server_address[1], flush=True)
server.serve_forever()
