# argv[4] connections inside inspected tunnels to 127.0.0.1:argv[1], each
# sending a head announcing 1 MiB (the most the proxy buffers whole) and
# all of the body but its last byte, then waiting: the supervisor holds
# whatever it accepted. Prints how many were held and refused (and why),
# writes the file argv[2], then waits (up to a minute) for the file argv[3].
import asyncio
import ssl
import sys

port, held_file, done_file, connections = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
BODY = b'a' * (1 << 20)
ctx = ssl.create_default_context()
keep = []


async def answer(r, wait):
    """What the proxy answered within `wait` seconds (None: nothing yet).
    A refusal closes the connection, so it is read to its end: its body
    may come in a later segment than its head."""
    try:
        got = await asyncio.wait_for(r.read(4096), wait)
    except asyncio.TimeoutError:
        return None
    while got:
        try:
            more = await asyncio.wait_for(r.read(4096), wait)
        except asyncio.TimeoutError:
            break
        if not more:
            break
        got += more
    return got


async def one():
    try:
        r, w = await inspected_tunnel(port, ctx)
        keep.append(w)
        w.write(('POST /hold HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nContent-Length: %d\r\n\r\n'
                 % (port, len(BODY))).encode())
        resp = await answer(r, 2)
        if resp is None:
            for at in range(0, len(BODY) - 1, 1 << 16):
                w.write(BODY[at:min(at + (1 << 16), len(BODY) - 1)])
                await asyncio.wait_for(w.drain(), 60)
            resp = await answer(r, 2)
        return resp or b'held'
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as e:
        return ('EXC ' + type(e).__name__).encode()


async def main():
    got = await asyncio.gather(*[one() for _ in range(connections)])
    print('held:', sum(1 for g in got if g == b'held'))
    print('refused:', sum(1 for g in got if g.startswith(b'HTTP/1.1 503')))
    print('other:', [g[:200] for g in got if g != b'held' and not g.startswith(b'HTTP/1.1 503')][:3])
    print('reason:', next((g.split(b'\r\n\r\n')[1].decode() for g in got
                           if g.startswith(b'HTTP/1.1 503')), '').strip(), flush=True)
    await held_until(held_file, done_file)


asyncio.run(main())
