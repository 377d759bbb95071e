# Whether a setuid binary grants anything: the mount's nosuid flag, what
# `su -c 'id -u' root` says, and our uids. argv[1]: the setuid binary.
import os
import subprocess
import sys

su = sys.argv[1]
print('nosuid:', bool(os.statvfs(su).f_flag & os.ST_NOSUID))
r = subprocess.run([su, '-c', 'id -u', 'root'], stdin=subprocess.DEVNULL,
                   capture_output=True, text=True)
print('su-rc:', r.returncode)
print('su-out:', r.stdout.strip().replace(chr(10), ' '))
print('su-err:', r.stderr.strip().replace(chr(10), ' '))
print('uid:', os.getuid(), os.geteuid())
