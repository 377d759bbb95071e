
# The address of a connect rewritten while the call runs: a thread flips
# the path in the sockaddr between the host's socket argv[1] and the
# sandbox's own argv[2] (same length) during 3000 connects. Prints how
# many connected and how many were refused.
import sys
import threading

host, own = sys.argv[1], sys.argv[2]
srv = socket.socket(socket.AF_UNIX)
srv.bind(own)
srv.listen(4096)
srv.setblocking(False)
buf = sockaddr_un(own)
stop = False


def flip():
    a, b = host.encode(), own.encode()
    while not stop:
        ctypes.memmove(ctypes.addressof(buf) + 2, a, len(a))
        ctypes.memmove(ctypes.addressof(buf) + 2, b, len(b))


t = threading.Thread(target=flip)
t.start()
ok = refused = 0
for i in range(3000):
    s = socket.socket(socket.AF_UNIX)
    if libc.connect(s.fileno(), buf, ctypes.sizeof(buf)) == 0:
        ok += 1
        try:
            s.send(b'race')
        except OSError:
            pass
    else:
        refused += 1
    s.close()
    try:
        while True:
            srv.accept()[0].close()
    except OSError:
        pass
stop = True
t.join()
print('ok:', ok)
print('refused:', refused)
