# Uses meshdep, installed into this script's own virtual environment from requirements.txt.
import json, sys

import meshdep

data = json.load(sys.stdin)
print(json.dumps({"greeting": meshdep.greet(data["name"]), "module": meshdep.__file__, "prefix": sys.prefix}))
