# UDP and TCP to the sandbox's own lo and to off-loopback targets. argv:
# the UDP v4 and v6 ports and the TCP port on lo, then (label, address)
# pairs; UDP goes to port 9 of each target, TCP to the TCP port. Each
# prints `label: SENT`, `label: OPEN` or `label: ERR <why>`.
import errno
import socket
import sys


def err(e):
    return errno.errorcode.get(e.errno, e.errno)


def udp(label, family, addr):
    s = socket.socket(family, socket.SOCK_DGRAM)
    try:
        s.sendto(b'from-sandbox', addr)
        print(label + ': SENT')
    except OSError as e:
        print(label + ': ERR', err(e))


def tcp(label, family, addr):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect(addr)
        print(label + ': OPEN')
    except OSError as e:
        print(label + ': ERR', err(e) if e.errno else type(e).__name__)


u4, u6, t6 = (int(a) for a in sys.argv[1:4])
udp('udp4-lo', socket.AF_INET, ('127.0.0.1', u4))
udp('udp6-lo', socket.AF_INET6, ('::1', u6))
tcp('tcp6-lo', socket.AF_INET6, ('::1', t6))
targets = sys.argv[4:]
for label, ip in zip(targets[::2], targets[1::2]):
    family = socket.AF_INET6 if ':' in ip else socket.AF_INET
    udp('udp-' + label, family, (ip, 9))
    tcp('tcp-' + label, family, (ip, t6))
