# input.op "leave": creates input.segments System V segments (keys input.key, key+1, ...) of input.megabytes
# each, holding input.secret, and exits without removing them. input.op "find": reads them back.
import json, sys

sys.dont_write_bytecode = True
import sysv_shm

data = json.load(sys.stdin)
keys = [data["key"] + index for index in range(data.get("segments", 1))]
if data["op"] == "leave":
    size = data["megabytes"] * 1024 * 1024
    ids = [sysv_shm.leave(key, size, data["secret"]) for key in keys]
    print(json.dumps({"shmids": ids}))
else:
    print(json.dumps({"found": [sysv_shm.find(key, data["length"]) for key in keys]}))
