
# A denied GET of nope.example:443, then an attempt to append a forged
# line to the log at argv[1]: `forge: OK` or `forge: ERR <errno>`.
import errno
import sys

print('denied:', status(get('nope.example', 443)))
try:
    open(sys.argv[1], 'a').write('forged\n')
    print('forge: OK')
except OSError as e:
    print('forge: ERR', errno.errorcode.get(e.errno, e.errno))
