# Name resolution inside: getaddrinfo of a public name and of the host's
# alias, then (with argv[1], the host's resolver address) a DNS query for
# example.com sent to it by connect+send and by sendto. Each prints
# `label: OPEN ...` or `label: ERR <why>`.
import errno
import socket
import sys


def err(e):
    if isinstance(e.errno, int) and e.errno > 0:
        return errno.errorcode.get(e.errno, e.errno)
    return type(e).__name__


for label, name in [('example', 'example.com'), ('host-internal', 'host.cordon.internal')]:
    try:
        print(label + ': OPEN', socket.getaddrinfo(name, 80))
    except OSError as e:
        print(label + ': ERR', err(e))
if len(sys.argv) > 1:
    ip = sys.argv[1]
    family = socket.AF_INET6 if ':' in ip else socket.AF_INET
    q = bytes.fromhex('abcd01000001000000000000076578616d706c6503636f6d0000010001')
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.settimeout(5)
    try:
        s.connect((ip, 53))
        s.send(q)
        s.recv(512)
        print('resolver: OPEN')
    except OSError as e:
        print('resolver: ERR', err(e))
    t = socket.socket(family, socket.SOCK_DGRAM)
    try:
        t.sendto(q, (ip, 53))
        print('resolver-sendto: OPEN')
    except OSError as e:
        print('resolver-sendto: ERR', err(e))
