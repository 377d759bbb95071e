# 100 threads blocked in connects to a listener that never accepts, then
# a gated sendmsg on a socketpair, which must still go through.
import os
import socket
import threading
import time

srv = socket.socket(socket.AF_UNIX)
srv.bind('/tmp/full.sock')
srv.listen(0)


def stuck():
    try:
        socket.socket(socket.AF_UNIX).connect('/tmp/full.sock')
    except OSError:
        pass


for i in range(100):
    threading.Thread(target=stuck, daemon=True).start()
time.sleep(1)
t = time.time()
a, b = socket.socketpair()
a.sendmsg([b'x'])
b.recv(1)
print('sendmsg: OK', flush=True)
os._exit(0)
