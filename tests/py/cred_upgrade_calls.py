
# Runs the upgrade() calls given as JSON in argv[1], in order: a list of
# [label, port, path, send or null, headers]; `$TEST_TOKEN` in a string
# stands for that variable's value, `$UPPER_TEST_TOKEN` for it upper-cased.
import os
import sys


def arg(text):
    token = os.environ.get('TEST_TOKEN', '')
    text = text.replace('$UPPER_TEST_TOKEN', token.upper())
    return text.replace('$TEST_TOKEN', token).encode('latin-1')


for label, port, path, send, headers in json.loads(sys.argv[1]):
    kwargs = {'headers': arg(headers)}
    if send is not None:
        kwargs['send'] = arg(send)
    upgrade(label, port, arg(path), **kwargs)
