# A GET of https://127.0.0.1:argv[1]/py by urllib (through the proxy the
# environment names) with TEST_TOKEN's value in a header: prints the body.
import os
import sys
import urllib.request as u

r = u.Request('https://127.0.0.1:%s/py' % sys.argv[1], headers={'X-Key': os.environ['TEST_TOKEN']})
print('py:', u.urlopen(r).read().decode())
