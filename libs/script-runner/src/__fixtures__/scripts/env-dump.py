# Reports its whole environment.
import json, os

print(json.dumps({"env": dict(os.environ)}))
