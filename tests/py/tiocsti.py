# On descriptor argv[1]: whether it is a terminal, whether TIOCGWINSZ works
# (control) and whether TIOCSTI (typing into the terminal) works.
import fcntl, termios, os, errno, struct, sys
fd = int(sys.argv[1])
print('isatty:', os.isatty(fd))
try:
    fcntl.ioctl(fd, termios.TIOCGWINSZ, b'\0' * 8)
    print('winsz: OK')
except OSError as e:
    print('winsz: ERR', errno.errorcode.get(e.errno, e.errno))
try:
    fcntl.ioctl(fd, termios.TIOCSTI, b'x')
    print('tiocsti: OK')
except OSError as e:
    print('tiocsti: ERR', errno.errorcode.get(e.errno, e.errno))
print('END')
