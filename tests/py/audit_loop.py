
# argv[2] GETs of 127.0.0.1:argv[1]; prints how many got 200.
import sys

port, n = int(sys.argv[1]), int(sys.argv[2])
ok = sum(status(get('127.0.0.1', port)) == 'HTTP/1.1 200 OK' for _ in range(n))
print('ok:', ok)
