
# Four CONNECT tunnels to 127.0.0.1:argv[1] under a cap of two: the status
# of each, whether the refusal names the flag, and that the first tunnel
# still carries bytes.
import sys

port = int(sys.argv[1])
a, ha = tunnel('127.0.0.1', port)
b, hb = tunnel('127.0.0.1', port)
print('first:', ha.split('\r\n')[0])
print('second:', hb.split('\r\n')[0])
c, hc = tunnel('127.0.0.1', port)
print('third:', hc.split('\r\n')[0])
print('names flag:', '--max-connections' in recv_all(c) + hc)
d, hd = tunnel('127.0.0.1', port)
print('fourth:', hd.split('\r\n')[0])
a.sendall(b'ping')
print('tunnel a:', a.recv(10).decode())
