# Forks `children` processes that each fill `megabytes` MB (every page written) and hold it until all of
# them are ready; then lets them go and returns their wait statuses. Each child stays under a per-process
# limit; together they may not.
import os


def hold_together(children, megabytes):
    ready_read, ready_write = os.pipe()
    release_read, release_write = os.pipe()
    pids = []
    for _ in range(children):
        pid = os.fork()
        if pid == 0:
            os.close(ready_read)
            os.close(release_write)
            block = b"\x01" * (megabytes * 1024 * 1024)
            os.write(ready_write, b"r")
            os.read(release_read, 1)
            os._exit(0 if len(block) > 0 else 1)
        pids.append(pid)
    os.close(ready_write)
    os.close(release_read)
    ready = 0
    while ready < children:
        got = os.read(ready_read, children)
        if not got:
            break
        ready += len(got)
    os.write(release_write, b"x" * children)
    statuses = [os.waitpid(pid, 0)[1] for pid in pids]
    os.close(ready_read)
    os.close(release_write)
    return {"ready": ready, "statuses": statuses}
