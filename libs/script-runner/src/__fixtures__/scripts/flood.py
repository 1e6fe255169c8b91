# Writes input.megabytes MB of stdout (not JSON) as fast as it can.
import json, sys

megabytes = json.load(sys.stdin)["megabytes"]
block = b"x" * (1024 * 1024)
for _ in range(megabytes):
    sys.stdout.buffer.write(block)
sys.stdout.flush()
