
# A GET of each host in argv on port 80 through the proxy.
import sys

for h in sys.argv[1:]:
    get(h, 80)
