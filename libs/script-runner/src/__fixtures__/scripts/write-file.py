# Tries to write input.content to each of input.paths; reports which writes worked.
import json, sys

data = json.load(sys.stdin)
results = {}
for path in data["paths"]:
    try:
        with open(path, "w") as handle:
            handle.write(data["content"])
        results[path] = "written"
    except OSError as error:
        results[path] = f"{type(error).__name__}: {error.strerror}"
print(json.dumps({"results": results}))
