# argv[1] threads each send 4 MiB at once on one end of a socketpair that
# no one reads: every send blocks, and each is a gated call (sendmsg) that
# one of init's gate workers copies and makes itself. Then prints what
# init holds resident before (`init_rss_before: <KiB>`) and at most during
# (`init_rss: <KiB>`), as /proc/1/status tells.
import socket, sys, threading, time

threading.stack_size(128 << 10)
n = int(sys.argv[1])
ours, _unread = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
data = b"x" * (4 << 20)  # one buffer, shared by every thread


def send():
    try:
        ours.sendmsg([data])
    except OSError as e:
        print("send:", e.errno, flush=True)


def init_rss():
    for l in open("/proc/1/status"):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])
    return 0


print("init_rss_before:", init_rss(), flush=True)
for _ in range(n):
    threading.Thread(target=send, daemon=True).start()
rss = 0
for _ in range(50):
    time.sleep(0.1)
    rss = max(rss, init_rss())
print("init_rss:", rss, flush=True)
import os

os._exit(0)
