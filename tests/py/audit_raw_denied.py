# A GET of denied.example through the HTTP proxy with a bare socket.
import socket

s = socket.create_connection(('127.0.0.1', 3128))
s.sendall(b'GET http://denied.example/ HTTP/1.1\r\nHost: denied.example\r\n\r\n')
print(s.recv(100))
