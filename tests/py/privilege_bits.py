# Prelude of the privilege-bit tries: sys() makes a raw system call and
# raises its errno as OSError; `f` is a file of ours and `fd` open on it.
import ctypes

libc = ctypes.CDLL(None, use_errno=True)


def sys(*a):
    if libc.syscall(*a) < 0:
        raise OSError(ctypes.get_errno(), 'syscall')


open('f', 'w').close()
fd = os.open('f', os.O_RDONLY)
