# Inside: for each of fds 0-2 that is a terminal, the settings
# `stty -echo -icanon -isig` makes; then every descriptor of every process
# it can see, as `dev:ino:rdev`, written to the file argv[1].
import os, sys, termios
out = []
for fd in (0, 1, 2):
    if os.isatty(fd):
        a = termios.tcgetattr(fd)
        a[3] &= ~(termios.ECHO | termios.ICANON | termios.ISIG)
        termios.tcsetattr(fd, termios.TCSANOW, a)
        out.append('changed %d' % fd)
for pid in os.listdir('/proc'):
    if not pid.isdigit():
        continue
    try:
        fds = os.listdir('/proc/%s/fd' % pid)
    except OSError:
        continue
    for fd in fds:
        try:
            st = os.stat('/proc/%s/fd/%s' % (pid, fd))
        except OSError:
            continue
        out.append('fd %s/%s %d:%d:%d' % (pid, fd, st.st_dev, st.st_ino, st.st_rdev))
open(sys.argv[1], 'w').write('\n'.join(out) + '\nEND\n')
