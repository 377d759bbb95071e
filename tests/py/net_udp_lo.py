# Whether lo is up: a UDP datagram to ourselves (Landlock does not
# restrict UDP).
import socket

a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
a.bind(('127.0.0.1', 0))
b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
b.sendto(b'ping', a.getsockname())
print('udp:', a.recv(10).decode())
