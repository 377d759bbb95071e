# ctypes helpers for the UNIX socket tests: raw() raises errno as OSError,
# unspec() connects to AF_UNSPEC, sockaddr_un() and sendmmsg() build the
# structures by hand.
import ctypes
import errno
import os
import socket

libc = ctypes.CDLL(None, use_errno=True)
def raw(ret):
    if ret < 0:
        e = ctypes.get_errno(); raise OSError(e, os.strerror(e))
    return ret
def unspec(s):
    raw(libc.connect(s.fileno(), ctypes.byref(ctypes.c_ushort(0)), 2))
class iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
class msghdr(ctypes.Structure):
    _fields_ = [('name', ctypes.c_void_p), ('namelen', ctypes.c_uint32), ('iov', ctypes.POINTER(iovec)),
                ('iovlen', ctypes.c_size_t), ('control', ctypes.c_void_p), ('controllen', ctypes.c_size_t),
                ('flags', ctypes.c_int)]
class mmsghdr(ctypes.Structure):
    _fields_ = [('hdr', msghdr), ('len', ctypes.c_uint)]
def sockaddr_un(path):
    b = path.encode()
    return ctypes.create_string_buffer(ctypes.c_ushort(socket.AF_UNIX).value.to_bytes(2, 'little') + b + b'\0', 2 + len(b) + 1)
def sendmmsg(s, payloads, path=None):
    addr = sockaddr_un(path) if path else None
    bufs = [ctypes.create_string_buffer(p, len(p)) for p in payloads]
    vecs = [iovec(ctypes.cast(b, ctypes.c_void_p), len(p)) for b, p in zip(bufs, payloads)]
    msgs = (mmsghdr * len(payloads))()
    for i, v in enumerate(vecs):
        msgs[i].hdr.iov = ctypes.pointer(v); msgs[i].hdr.iovlen = 1
        if addr is not None:
            msgs[i].hdr.name = ctypes.cast(addr, ctypes.c_void_p); msgs[i].hdr.namelen = ctypes.sizeof(addr)
    n = raw(libc.sendmmsg(s.fileno(), msgs, len(payloads), 0))
    if n != len(payloads) or any(msgs[i].len != len(p) for i, p in enumerate(payloads)):
        raise OSError(errno.EIO, 'short sendmmsg: %d %r' % (n, [m.len for m in msgs]))
