
# Prints `LABEL: <status line>` of a GET of HOST:PORT through the proxy.
# argv: LABEL HOST PORT.
import sys

label, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
print(label + ':', status(get(host, port)))
