# argv[4] connections inside inspected tunnels to 127.0.0.1:argv[1], each
# speaking HTTP/2 by hand: a stream window of one byte, argv[5] requests
# for /big (3 MiB streamed each), and it never reads again: whatever the
# upstream sends piles up in the proxy. Prints how many were held, writes
# the file argv[2], then waits (up to a minute) for the file argv[3].
import asyncio
import ssl
import struct
import sys

port, held_file, done_file = sys.argv[1], sys.argv[2], sys.argv[3]
connections, requests = int(sys.argv[4]), int(sys.argv[5])
ctx = ssl.create_default_context()
ctx.set_alpn_protocols(['h2'])
keep = []


def frame(kind, flags, stream, payload):
    return struct.pack('>I', len(payload))[1:] + bytes([kind, flags]) + struct.pack('>I', stream) + payload


def lit(index, value):
    return bytes([index]) + bytes([len(value)]) + value


async def one():
    try:
        r, w = await inspected_tunnel(port, ctx)
        keep.append(w)
        if w.get_extra_info('ssl_object').selected_alpn_protocol() != 'h2':
            return b'refused'
        out = b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' + frame(4, 0, 0, struct.pack('>HI', 4, 1))
        for i in range(requests):
            block = b'\x82\x87' + lit(0x44, b'/big') + lit(0x41, ('127.0.0.1:%s' % port).encode())
            out += frame(1, 5, 1 + 2 * i, block)
        w.write(out)
        await w.drain()
        return b'held'
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as e:
        return ('EXC ' + type(e).__name__).encode()


async def main():
    got = await asyncio.gather(*[one() for _ in range(connections)])
    print('held:', sum(1 for g in got if g == b'held'))
    print('other:', [g for g in got if g != b'held'][:3], flush=True)
    await asyncio.sleep(5)
    await held_until(held_file, done_file)


asyncio.run(main())
