# Fakes of the OpenAI Responses API (for `codex exec`) and the Gemini API
# (v1beta, for `gemini -p`), over HTTPS on 127.0.0.1, for tests/agents.rs;
# every request is appended to RECORD as one JSON line (method, path,
# lower-case headers, body). Each answer is one text, "hello from the fake
# API". While the file RECORD.hold exists, the answer to a prompt waits
# (after its request is recorded), so a test can look at the agent while
# it waits. Usage: fake_agent_api.py openai|gemini CERT KEY RECORD; prints
# its port, then serves until killed.
#
# openai: POST .../responses streams server-sent events (Codex needs the
# message's output_item.done and response.completed); a GET asking for a
# WebSocket gets 426, on which Codex falls back to HTTP at once.
# gemini: POST .../models/M:streamGenerateContent streams one chunk, and
# :generateContent answers whole; a request for JSON with a schema (the
# CLI's model router) gets the smallest value that fits the schema, on
# anything else the CLI retries and can hang.
import http.server
import json
import os
import ssl
import sys
import threading
import time

ANSWER = 'hello from the fake API'
KIND, CERT, KEY, RECORD = sys.argv[1:5]
lock = threading.Lock()


def openai_events(model):
    message = {'type': 'message', 'id': 'msg_fake', 'role': 'assistant', 'status': 'completed',
               'content': [{'type': 'output_text', 'text': ANSWER, 'annotations': []}]}
    response = {'id': 'resp_fake', 'object': 'response', 'model': model, 'output': []}
    usage = {'input_tokens': 10, 'input_tokens_details': {'cached_tokens': 0},
             'output_tokens': 5, 'output_tokens_details': {'reasoning_tokens': 0},
             'total_tokens': 15}
    events = [
        {'type': 'response.created', 'response': dict(response, status='in_progress')},
        {'type': 'response.output_item.added', 'output_index': 0,
         'item': dict(message, status='in_progress', content=[])},
        {'type': 'response.output_text.delta', 'output_index': 0, 'content_index': 0,
         'item_id': 'msg_fake', 'delta': ANSWER},
        {'type': 'response.output_item.done', 'output_index': 0, 'item': message},
        {'type': 'response.completed',
         'response': dict(response, status='completed', output=[message], usage=usage)},
    ]
    return ''.join('event: %s\ndata: %s\n\n' % (e['type'], json.dumps(e)) for e in events)


def fitting(schema):
    if schema.get('enum'):
        return schema['enum'][0]
    kind = str(schema.get('type', 'object')).lower()
    if kind == 'object':
        props = schema.get('properties', {})
        return {k: fitting(props.get(k, {})) for k in schema.get('required', props)}
    return {'string': 'fake', 'integer': 1, 'number': 1, 'boolean': False, 'array': []}.get(kind)


def gemini_answer(model, request):
    config = request.get('generationConfig') or {}
    schema = config.get('responseJsonSchema') or config.get('responseSchema')
    text = json.dumps(fitting(schema)) if schema else ANSWER
    return {'candidates': [{'content': {'role': 'model', 'parts': [{'text': text}]},
                            'finishReason': 'STOP', 'index': 0}],
            'usageMetadata': {'promptTokenCount': 10, 'candidatesTokenCount': 5,
                              'totalTokenCount': 15},
            'modelVersion': model}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def reply(self, code, kind, body):
        body = body.encode() if isinstance(body, str) else body
        self.send_response(code)
        self.send_header('content-type', kind)
        self.send_header('content-length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def record(self, body):
        entry = {'method': self.command, 'path': self.path, 'body': body.decode('utf-8', 'replace'),
                 'headers': {k.lower(): v for k, v in self.headers.items()}}
        with lock, open(RECORD, 'a') as f:
            f.write(json.dumps(entry) + '\n')

    def do_GET(self):
        self.record(b'')
        if self.headers.get('upgrade', '').lower() == 'websocket':
            return self.reply(426, 'application/json', '{}')
        self.reply(404, 'application/json', '{}')

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get('content-length') or 0))
        self.record(body)
        try:
            request = json.loads(body or b'{}')
        except ValueError:
            request = {}
        path = self.path.split('?')[0]
        while os.path.exists(RECORD + '.hold'):
            time.sleep(0.05)
        if KIND == 'openai' and path.endswith('/responses'):
            return self.reply(200, 'text/event-stream', openai_events(request.get('model', 'm')))
        model, _, method = path.rpartition('/')[2].partition(':')
        if KIND == 'gemini' and method == 'streamGenerateContent':
            chunk = json.dumps(gemini_answer(model, request))
            return self.reply(200, 'text/event-stream', 'data: %s\r\n\r\n' % chunk)
        if KIND == 'gemini' and method == 'generateContent':
            return self.reply(200, 'application/json', json.dumps(gemini_answer(model, request)))
        self.reply(404, 'application/json', '{}')


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def finish_request(self, request, client_address):
        # The handshake in the connection's own thread: a stalled client
        # does not hold up accept().
        try:
            request = context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        super().finish_request(request, client_address)


context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(CERT, KEY)
server = Server(('127.0.0.1', 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
