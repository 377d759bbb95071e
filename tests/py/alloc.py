# Allocates argv[1] MiB: `alloc: OK <MiB>` or `alloc: MemoryError`.
import sys

mb = int(sys.argv[1])
try:
    b = b'x' * (mb << 20)
    print('alloc: OK', len(b) >> 20)
except MemoryError:
    print('alloc: MemoryError')
sys.stdout.flush()
