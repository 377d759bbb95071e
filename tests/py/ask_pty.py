# Runs a command on a pseudo-terminal of its own, as a user at a terminal
# would (the terminal is its controlling one), for tests/ask.rs: answers
# each `cordon --ask` question with the next key of $ANSWERS ("os": once,
# then sandbox), and none once they run out (the question then waits out
# its time). Prints one JSON object: the exit code, all the terminal
# showed, and how many questions it saw. Usage: ask_pty.py CMD [ARGS]...
import json
import os
import pty
import select
import sys
import time

QUESTION = b'or [d]eny?'
answers = list(os.environ.get('ANSWERS', ''))
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
shown = b''
asked = 0
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    ready, _, _ = select.select([fd], [], [], 0.2)
    if not ready:
        continue
    try:
        data = os.read(fd, 65536)
    except OSError:  # EIO: every process on the terminal is gone
        break
    if not data:
        break
    shown += data
    while asked < shown.count(QUESTION):
        asked += 1
        if answers:
            os.write(fd, answers.pop(0).encode())
else:
    os.kill(pid, 9)
_, status = os.waitpid(pid, 0)
print(json.dumps({'code': os.waitstatus_to_exitcode(status),
                  'shown': shown.decode('utf-8', 'replace'), 'asked': asked}))
