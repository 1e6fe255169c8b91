# Writes input.files files of input.megabytes MB each into $HOME (each under the per-file limit) and says
# on stderr first how large the file system under $HOME is.
import json, os, sys

data = json.load(sys.stdin)
home = os.environ["HOME"]
stats = os.statvfs(home)
print(f"home file system: {stats.f_blocks * stats.f_frsize} bytes", file=sys.stderr)
chunk = b"\x01" * (1024 * 1024)
written = 0
for index in range(data["files"]):
    with open(os.path.join(home, f"fill-{index}"), "wb") as handle:
        for _ in range(data["megabytes"]):
            handle.write(chunk)
            written += len(chunk)
print(json.dumps({"written": written}))
