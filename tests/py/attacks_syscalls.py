# Prelude of the process-escape tries: sc() makes a raw system call and
# raises its errno as OSError. The guard keeps these calls from ever
# running on the host (e.g. against a fake cordon): inside, the command's
# parent is init.
import sys

if os.getppid() != 1:
    sys.exit('not inside a sandbox: refusing to run host-affecting probes')
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def sc(*a):
    r = libc.syscall(*[ctypes.c_long(x) if isinstance(x, int) else x for x in a])
    if r < 0:
        raise OSError(ctypes.get_errno(), 'syscall')
    return r


CLONE_NEWUSER = 0x10000000
