# A fake of the Anthropic Messages API over HTTPS on 127.0.0.1, for the
# agent benchmark: every POST /v1/messages gets one text block (streamed as
# server-sent events when the request asks for a stream), anything else
# `{}`. Usage: fake_anthropic.py CERT KEY; prints its port, then serves
# until killed.
import http.server
import json
import ssl
import sys

ANSWER = 'hello from the fake API'


def message(model, content, stop):
    return {'id': 'msg_fake', 'type': 'message', 'role': 'assistant', 'model': model,
            'content': content, 'stop_reason': stop, 'stop_sequence': None,
            'usage': {'input_tokens': 1, 'output_tokens': 1}}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def reply(self, kind, body):
        self.send_response(200)
        self.send_header('content-type', kind)
        self.send_header('content-length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.reply('application/json', b'{}')

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get('content-length') or 0))
        if not self.path.startswith('/v1/messages') or 'count_tokens' in self.path:
            return self.reply('application/json', b'{}')
        req = json.loads(body or b'{}')
        model = req.get('model')
        if not req.get('stream'):
            whole = message(model, [{'type': 'text', 'text': ANSWER}], 'end_turn')
            return self.reply('application/json', json.dumps(whole).encode())
        events = [
            ('message_start', {'type': 'message_start', 'message': message(model, [], None)}),
            ('content_block_start', {'type': 'content_block_start', 'index': 0,
                                     'content_block': {'type': 'text', 'text': ''}}),
            ('content_block_delta', {'type': 'content_block_delta', 'index': 0,
                                     'delta': {'type': 'text_delta', 'text': ANSWER}}),
            ('content_block_stop', {'type': 'content_block_stop', 'index': 0}),
            ('message_delta', {'type': 'message_delta', 'usage': {'output_tokens': 5},
                               'delta': {'stop_reason': 'end_turn', 'stop_sequence': None}}),
            ('message_stop', {'type': 'message_stop'}),
        ]
        stream = ''.join('event: %s\ndata: %s\n\n' % (n, json.dumps(d)) for n, d in events)
        self.reply('text/event-stream', stream.encode())


server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = ctx.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
