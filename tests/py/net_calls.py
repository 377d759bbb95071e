
# Runs the helper calls given as JSON in argv[1], in order: a list of
# [name, [args...], {keyword args}].
import sys

for name, args, kwargs in json.loads(sys.argv[1]):
    globals()[name](*args, **kwargs)
