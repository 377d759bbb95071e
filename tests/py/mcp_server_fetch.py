# An MCP server (the `mcp` Python SDK's MCPServer, over stdio) for
# tests/mcp.rs, run inside `cordon mcp run`: `fetch` GETs a URL with the
# value of the variable TOKEN_VAR as a bearer token (as a server with an
# API key does) and answers the status and body, or the error; `env`
# answers a variable's value, or "(unset)".
import os
import urllib.request

from mcp.server import MCPServer

server = MCPServer('fetch-test')


@server.tool()
def fetch(url: str, token_var: str = '') -> str:
    request = urllib.request.Request(url)
    if token_var:
        request.add_header('authorization', 'Bearer ' + os.environ.get(token_var, ''))
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return 'status %d: %s' % (answer.status, answer.read().decode())
    except Exception as e:  # the test reads what failed
        return 'failed: %s' % e


@server.tool()
def env(name: str) -> str:
    return os.environ.get(name, '(unset)')


server.run()
