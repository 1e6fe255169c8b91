# Forks input.children processes that together hold input.megabytes MB each at the same time, then reports.
import json, sys

sys.dont_write_bytecode = True
import memory_children

data = json.load(sys.stdin)
print(json.dumps(memory_children.hold_together(data["children"], data["megabytes"])))
