# 500 refused unshare calls, then a refused connect to a UNIX socket whose
# name holds control characters.
import ctypes
import os
import socket

libc = ctypes.CDLL(None, use_errno=True)
for i in range(500):
    libc.unshare(0x10000000)
name = 'esc\x1b]0;owned\x07.sock'
s = socket.socket(socket.AF_UNIX)
s.bind(name)
s.close()
try:
    socket.socket(socket.AF_UNIX).connect(name)
except OSError:
    pass
os.unlink(name)
