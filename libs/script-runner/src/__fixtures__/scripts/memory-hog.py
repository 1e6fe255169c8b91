# Allocates input.megabytes MB in one piece and reports success.
import json, sys

megabytes = json.load(sys.stdin)["megabytes"]
block = bytearray(megabytes * 1024 * 1024)
print(json.dumps({"allocated": len(block)}))
