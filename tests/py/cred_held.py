# Put before the scripts that hold connections open in the supervisor.
import asyncio
import os


async def held_until(held_file, done_file):
    """Writes held_file, then waits (up to a minute) for done_file: the
    test measures the supervisor in between."""
    open(held_file, 'w').write('x')
    for _ in range(1200):
        if os.path.exists(done_file):
            break
        await asyncio.sleep(0.05)

