# Reads every process's environ and cmdline under /proc looking for a
# needle, given reversed in argv[1] so this command line itself does not
# hold it; prints how many files were read, the hits and our variables.
import os
import sys

needle = sys.argv[1][::-1]
hits, read = [], 0
for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
    for f in ('environ', 'cmdline'):
        try:
            data = open('/proc/%s/%s' % (pid, f), 'rb').read()
            read += 1
        except OSError:
            continue
        if needle.encode() in data:
            hits.append('%s/%s' % (pid, f))
print('read:', read)
print('hits:', ' '.join(hits) or 'none')
print('env:', ' '.join(sorted(os.environ)))
