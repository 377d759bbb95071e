# A server on 127.0.0.1:argv[1] inside and a client of it: `bind: OK` or
# `bind: ERR <errno>`, then `connect: OK <reply>` or `connect: ERR <why>`.
import errno
import socket
import sys
import threading

port = int(sys.argv[1])


def err(e):
    return errno.errorcode.get(e.errno, e.errno)


srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    srv.bind(('127.0.0.1', port))
    srv.listen(1)
    print('bind: OK', flush=True)
    bound = True
except OSError as e:
    print('bind: ERR', err(e), flush=True)
    bound = False


def serve():
    c, _ = srv.accept()
    c.sendall(b'hello-' + c.recv(10))
    c.close()


# Only a bound socket can accept: a server thread on one that is not would
# die with a traceback while the interpreter exits.
if bound:
    threading.Thread(target=serve, daemon=True).start()
cl = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
cl.settimeout(5)
try:
    cl.connect(('127.0.0.1', port))
    cl.sendall(b'x')
    print('connect: OK', cl.recv(20).decode())
except OSError as e:
    print('connect: ERR', err(e) if e.errno else type(e).__name__)
