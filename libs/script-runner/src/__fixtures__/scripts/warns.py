# Prints a valid result but also a warning on stderr, and exits 0.
import json
import sys

sys.stderr.write("warning: this API is deprecated\n")
print(json.dumps({"ok": True}))
