# The mode of what a creating call makes as the umask changes: in one
# thread, across threads that share their umask, in a thread whose file
# system attributes are its own (unshare CLONE_FS), in a forked child, and
# with threads changing it while others create. Prints `label mode` per
# name made, in a fresh directory argv[1]: run on the host and in the
# sandbox, the outputs must match.
import ctypes, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
CLONE_FS = 0x200
os.mkdir(sys.argv[1]); os.chdir(sys.argv[1])
def make(name):
    os.close(os.open(name, os.O_CREAT | os.O_WRONLY, 0o666))
    return oct(os.lstat(name).st_mode & 0o777)
def show(label, name):
    print(label, make(name), flush=True)

# One thread, the umask changed between calls, the same name made again
# after each change (the gate reads the umask once and keeps it).
for i, mask in enumerate([0o022, 0o077, 0o002, 0o077, 0o000, 0o027]):
    os.umask(mask)
    show('seq-%o' % mask, 'seq-%d' % i)
    show('seq-%o-again' % mask, 'seq-%d-b' % i)

# A thread changes the umask its process shares.
os.umask(0o022); show('before-thread', 'bt')
t = threading.Thread(target=lambda: os.umask(0o077)); t.start(); t.join()
show('after-thread', 'at')

# A forked child changes its own umask only.
os.umask(0o022)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.umask(0o077)
    os.write(w, make('child').encode()); os._exit(0)
os.waitpid(pid, 0)
print('child', os.read(r, 100).decode(), flush=True)
show('parent', 'parent')

# Creations while another thread flips the umask: each name is made with
# one of the two, never anything else.
stop = threading.Event()
def flip():
    while not stop.is_set():
        os.umask(0o077); os.umask(0o022)
t = threading.Thread(target=flip); t.start()
seen = set()
for i in range(300):
    seen.add(make('race-%d' % i))
stop.set(); t.join()
print('race', sorted(seen - {'0o600', '0o644'}), flush=True)
os.umask(0o002)
show('after-race', 'after-race')

# A thread with attributes of its own: its umask is apart from the rest.
own = {}
def apart():
    if libc.unshare(CLONE_FS) != 0:
        own['err'] = ctypes.get_errno(); return
    os.umask(0o007)
    own['thread'] = make('own-thread')
os.umask(0o022)
t = threading.Thread(target=apart); t.start(); t.join()
print('own-fs', own.get('thread', 'ERR %s' % own.get('err')), flush=True)
show('own-fs-main', 'own-main')
os.umask(0o077)
show('own-fs-after', 'own-after')

