# Runs the tries given as JSON in argv[1]: {"modules": [...], "prelude":
# code, "cases": [[label, statement], ...], "then": code}. Imports os,
# errno and the modules, runs the prelude, then each statement, printing
# `label: OK` or `label: ERR <errno name>`, then the closing code. A
# statement's later lines are indented four spaces, as they would stand in
# the try block around it.
import errno
import json
import os
import sys

spec = json.loads(sys.argv[1])
scope = {'os': os, 'errno': errno}
for name in spec['modules']:
    scope[name] = __import__(name)
exec(spec['prelude'], scope)
for label, stmt in spec['cases']:
    try:
        exec(stmt.replace('\n    ', '\n'), scope)
        print(label + ': OK')
    except OSError as e:
        print(label + ': ERR', errno.errorcode.get(e.errno, e.errno))
exec(spec['then'], scope)
