# Writes argv[1] bytes to /tmp/fill: `write: OK` or `write: ERR <errno>`.
import errno
import sys

size = int(sys.argv[1])
try:
    with open('/tmp/fill', 'wb') as f:
        f.write(b'x' * size)
    print('write: OK')
except OSError as e:
    print('write: ERR', errno.errorcode.get(e.errno, e.errno))
