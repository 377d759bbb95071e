# Runs a command on a pseudo-terminal of its own, as a user at a terminal
# would (the terminal is its controlling one), for tests/ask.rs: answers
# each `cordon --ask` question, and each "type again", with the next
# string of $ANSWERS (a JSON list, e.g. ["o\r", "d\r"]: once, then deny),
# $ANSWER_DELAY seconds after it shows, and none once they run out (the
# question then waits out its time). With $REPLY set it also plays
# a terminal that answers the queries the command prints (colour, device
# attributes, version, cursor position), with replies full of answer
# letters, $REPLY seconds late (so that some arrive while a question is
# on screen). Prints one JSON object: the exit code, all the terminal
# showed, and how many questions it saw. Usage: ask_pty.py CMD [ARGS]...
import json
import os
import pty
import re
import select
import sys
import time

QUESTION = b'stop asking?'
AGAIN = b', then Enter: '
QUERIES = [
    (re.compile(rb'\x1b\](1[01]|4;\d+);\?(\x07|\x1b\\)'),
     lambda m: b'\x1b]' + m.group(1) + b';rgb:aaaa/aaaa/aaaa\x1b\\'),
    (re.compile(rb'\x1b\[>?c'), lambda m: b'\x1b[?64;1;2;6;9;15;18;21;22c'),
    (re.compile(rb'\x1b\[>0q'), lambda m: b'\x1bP>|xterm(390)aaa\x1b\\'),
    (re.compile(rb'\x1b\[6n'), lambda m: b'\x1b[24;80R'),
    (re.compile(rb'\x1b\[\?1004h'), lambda m: b'\x1b[I\x1b[O'),
]
answers = [a.encode('latin-1') for a in json.loads(os.environ.get('ANSWERS', '[]'))]
reply_after = os.environ.get('REPLY')
# cordon throws away what is typed within a second of a question.
answer_after = float(os.environ.get('ANSWER_DELAY', '1.2'))
prompted = 0
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
shown = b''
scanned = 0
pending = []  # (when, bytes): the terminal's replies not sent yet
asked = 0
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    now = time.monotonic()
    for when, data in [p for p in pending if p[0] <= now]:
        os.write(fd, data)
    pending = [p for p in pending if p[0] > now]
    ready, _, _ = select.select([fd], [], [], 0.05)
    if not ready:
        continue
    try:
        data = os.read(fd, 65536)
    except OSError:  # EIO: every process on the terminal is gone
        break
    if not data:
        break
    shown += data
    if reply_after is not None:
        # Queries split between reads are found once whole.
        window = shown[max(0, scanned - 64):]
        for pattern, reply in QUERIES:
            for m in pattern.finditer(window):
                if m.end() + max(0, scanned - 64) > scanned:
                    pending.append((now + float(reply_after), reply(m)))
        scanned = len(shown)
    asked = shown.count(QUESTION)
    while prompted < asked + shown.count(AGAIN):
        prompted += 1
        if answers:
            pending.append((now + answer_after, answers.pop(0)))
else:
    os.kill(pid, 9)
_, status = os.waitpid(pid, 0)
print(json.dumps({'code': os.waitstatus_to_exitcode(status),
                  'shown': shown.decode('utf-8', 'replace'), 'asked': asked}))
