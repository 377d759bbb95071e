# A TCP connect to 127.0.0.1:argv[1]: `connect: OK` or `connect: ERR <why>`.
import errno
import socket
import sys

port = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.settimeout(5)
try:
    s.connect(('127.0.0.1', port))
    s.sendall(b'from-sandbox')
    print('connect: OK')
except OSError as e:
    print('connect: ERR', errno.errorcode.get(e.errno, e.errno) if e.errno else type(e).__name__)
