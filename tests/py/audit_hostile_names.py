
# Names the sandbox chooses, made to reach the user's terminal raw: git
# repositories named with terminal escapes (and one not UTF-8) whose
# config the sweep neutralises, and denied host names with bidirectional
# and invisible characters.
import subprocess

name = 'repo\x1b[2K\x1b]52;c;ZWNobyBvd25lZA==\x07\x1b[8mhidden'
for repo in [name, b'bytes\xff\xfename']:
    subprocess.run(['git', 'init', '-q', repo], check=True)
    subprocess.run(['git', '-C', repo, 'config', 'core.fsmonitor', 'x'], check=True)
for h in ['evil\u202egpj.example', 'a\u2066b.example', 'zero\u200bwidth.example']:
    print('denied:', status(get(h, 80)))
