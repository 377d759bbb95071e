
# A valid request, then the ambiguous one argv[3] (a label of
# framing_cases.py), each sent as it is to the HTTP proxy. argv: the
# request target, the Host value, the label.
import sys

HEAD, CHUNKED, CASES = framing_cases(sys.argv[1], sys.argv[2])
raw('control', HEAD + b'Content-Length: 5\r\n\r\nhello')
raw(sys.argv[3], dict(CASES)[sys.argv[3]])
