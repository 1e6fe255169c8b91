# A long-lived script for ScriptRunner.start: one JSON command per line on stdin, one JSON answer per line.
# {"op": "shm", "key", "megabytes", "secret"} leaves a System V segment; {"op": "find", "key", "length"}
# reads one; {"op": "fill", "megabytes"} writes $HOME full and says how far it got; {"op": "hog",
# "children", "megabytes"} forks children that fill memory and hold it together; {"op": "cgroup"} answers
# with its /proc/self/cgroup.
import json, os, sys
sys.dont_write_bytecode = True
import memory_children, sysv_shm

for line in sys.stdin:
    command = json.loads(line)
    op = command["op"]
    if op == "shm":
        size = command["megabytes"] * 1024 * 1024
        reply = {"shmid": sysv_shm.leave(command["key"], size, command["secret"])}
    elif op == "find":
        reply = {"found": sysv_shm.find(command["key"], command["length"])}
    elif op == "fill":
        written, error = 0, None
        try:
            with open(os.path.join(os.environ["HOME"], "fill"), "wb") as handle:
                for _ in range(command["megabytes"]):
                    handle.write(b"\x01" * (1024 * 1024))
                    handle.flush()
                    written += 1024 * 1024
        except OSError as failure:
            error = failure.strerror
        reply = {"written": written, "error": error}
    elif op == "hog":
        reply = memory_children.hold_together(command["children"], command["megabytes"])
    elif op == "cgroup":
        with open("/proc/self/cgroup") as handle:
            reply = {"cgroup": handle.read()}
    else:
        reply = {"error": f"unknown op {op}"}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
