# For each (label, path) pair in argv, prints `label: readable`, `empty`
# or `denied`. With `--write NAME` first, then writes NAME in the current
# directory and prints `wrote: yes`.
import os
import sys

args = sys.argv[1:]
write = None
if args[:1] == ['--write']:
    write, args = args[1], args[2:]


def state(p):
    try:
        if os.path.isdir(p):
            return 'readable' if os.listdir(p) else 'empty'
        with open(p, 'rb') as f:
            return 'readable' if f.read(1) else 'empty'
    except OSError:
        return 'denied'


for label, path in zip(args[::2], args[1::2]):
    print(label + ': ' + state(path))
if write:
    open(write, 'w').write('x')
    print('wrote: yes')
