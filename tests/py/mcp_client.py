# A real MCP client (the `mcp` Python SDK) for tests/mcp.rs: starts the
# server NAME of the client config CONFIG (JSON mcpServers / servers, or
# Codex TOML mcp_servers) as a client would, with the whole environment of
# this process plus the entry's env (as Claude Code passes it), then
# initialize, tools/list and each call given as TOOL=JSON_ARGUMENTS.
# Prints one JSON object: the server's name, the tools, each call's text
# and whether it was an error. With ROUNDS=N in the environment, it then
# times N calls of the first tool and adds their mean in microseconds.
# Usage: mcp_client.py CONFIG NAME [TOOL=ARGS]...
import json
import os
import sys
import time

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def entry(config, name):
    with open(config, 'rb') as f:
        raw = f.read()
    if config.endswith('.toml'):
        import tomllib
        return tomllib.loads(raw.decode())['mcp_servers'][name]
    doc = json.loads(raw)
    for key in ('mcpServers', 'servers'):
        if name in doc.get(key, {}):
            return doc[key][name]
    raise SystemExit('no server %s in %s' % (name, config))


def text_of(result):
    return ''.join(getattr(c, 'text', '') for c in result.content)


async def main(config, name, calls):
    server = entry(config, name)
    params = StdioServerParameters(
        command=server['command'], args=server.get('args', []),
        env=dict(os.environ) | server.get('env', {}), cwd=os.getcwd())
    out = {}
    async with stdio_client(params) as streams:
        async with ClientSession(*streams) as session:
            init = await session.initialize()
            out['server'] = init.server_info.name
            out['tools'] = sorted(t.name for t in (await session.list_tools()).tools)
            out['calls'] = []
            for call in calls:
                tool, _, arguments = call.partition('=')
                result = await session.call_tool(tool, json.loads(arguments or '{}'))
                out['calls'].append({'tool': tool, 'text': text_of(result),
                                     'error': bool(result.is_error)})
            rounds = int(os.environ.get('ROUNDS', '0'))
            if rounds and calls:
                tool, _, arguments = calls[0].partition('=')
                arguments = json.loads(arguments or '{}')
                start = time.perf_counter()
                for _ in range(rounds):
                    await session.call_tool(tool, arguments)
                out['mean_us'] = (time.perf_counter() - start) / rounds * 1e6
    print(json.dumps(out))


anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3:])
