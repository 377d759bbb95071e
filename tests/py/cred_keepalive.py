# Three requests on one inspected tunnel to 127.0.0.1:argv[1] (the second
# answered with `Connection: close`): each path, status and what the
# upstream echoed as the request's target.
import http.client
import ssl
import sys

c = http.client.HTTPSConnection('127.0.0.1', 3128, context=ssl.create_default_context())
c.set_tunnel('127.0.0.1', int(sys.argv[1]))
for path in ['/one', '/close', '/three']:
    c.request('GET', path)
    r = c.getresponse()
    print(path, r.status, r.read().split(b' ')[1].decode())
