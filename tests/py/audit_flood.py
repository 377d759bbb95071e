
# argv[1] GETs cycling through argv[2] distinct refused host names.
import sys

n, distinct = int(sys.argv[1]), int(sys.argv[2])
for i in range(n):
    get('h%d.example' % (i % distinct), 80)
