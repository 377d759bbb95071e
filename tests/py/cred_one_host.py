# Requests inside an inspected tunnel to argv[1] (host:port) that name
# more than one host or carry userinfo, and an absolute-form one: prints
# each one's status code.
import socket
import ssl
import sys

authority = sys.argv[1].encode()


def send(label, data):
    s = socket.create_connection(('127.0.0.1', 3128), timeout=20)
    s.sendall(b'CONNECT ' + authority + b' HTTP/1.1\r\n\r\n')
    s.recv(100)
    t = ssl.create_default_context().wrap_socket(s, server_hostname='127.0.0.1')
    t.sendall(data.replace(b'AUTHORITY', authority))
    got = b''.join(iter(lambda: t.recv(65536), b''))
    print(label + ':', got.split(b' ')[1].decode() if b' ' in got else 'none', flush=True)


send('two-hosts', b'GET /two HTTP/1.1\r\nHost: AUTHORITY\r\nHost: AUTHORITY\r\nConnection: close\r\n\r\n')
send('userinfo', b'GET /user HTTP/1.1\r\nHost: evil@AUTHORITY\r\nConnection: close\r\n\r\n')
send('abs-userinfo', b'GET https://evil@AUTHORITY/absuser HTTP/1.1\r\nHost: AUTHORITY\r\nConnection: close\r\n\r\n')
send('absolute', b'GET https://AUTHORITY/absolute?q=1 HTTP/1.1\r\nHost: AUTHORITY\r\nConnection: close\r\n\r\n')
