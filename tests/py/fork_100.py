# Forks 100 sleeping children, counts successes and the errno of
# failures, then kills and reaps them.
import os, errno, signal, time
kids, errs = [], set()
for i in range(100):
    try:
        pid = os.fork()
    except OSError as e:
        errs.add(errno.errorcode.get(e.errno, str(e.errno)))
        continue
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    kids.append(pid)
print('forked:', len(kids))
print('errors:', ' '.join(sorted(errs)) or 'none')
for k in kids:
    os.kill(k, signal.SIGKILL)
for k in kids:
    os.waitpid(k, 0)
print('done: yes')
