# Put before the scripts that hold connections open in the supervisor.
import asyncio
import os


async def inspected_tunnel(port, ctx):
    """A CONNECT tunnel to 127.0.0.1:port through the proxy, with TLS
    (`ctx`) inside: its reader and writer."""
    r, w = await asyncio.open_connection('127.0.0.1', 3128)
    w.write(('CONNECT 127.0.0.1:%s HTTP/1.1\r\n\r\n' % port).encode())
    await r.readuntil(b'\r\n\r\n')
    await w.start_tls(ctx, server_hostname='127.0.0.1')
    return r, w


async def held_until(held_file, done_file):
    """Writes held_file, then waits (up to a minute) for done_file: the
    test measures the supervisor in between."""
    open(held_file, 'w').write('x')
    for _ in range(1200):
        if os.path.exists(done_file):
            break
        await asyncio.sleep(0.05)

