# Programs that ignore the proxy: direct TCP connects to 127.0.0.1:argv[1]
# and [::1]:argv[2], and urllib told to use no proxy, each `label: OPEN` or
# `label: ERR <why>`.
import errno
import socket
import sys
import urllib.request

p, v6_port = int(sys.argv[1]), int(sys.argv[2])


def direct(label, family, addr):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect(addr)
        s.sendall(b'GET /direct HTTP/1.1\r\n\r\n')
        print(label + ': OPEN')
    except OSError as e:
        print(label + ': ERR', errno.errorcode.get(e.errno, type(e).__name__))


direct('v4', socket.AF_INET, ('127.0.0.1', p))
direct('v6', socket.AF_INET6, ('::1', v6_port))
try:
    o = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    o.open('http://127.0.0.1:%d/urllib' % p, timeout=10).read()
    print('urllib: OPEN')
except OSError as e:
    print('urllib: ERR', type(e).__name__)
