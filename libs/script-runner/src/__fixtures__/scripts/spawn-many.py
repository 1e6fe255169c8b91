# Starts up to input.count sleeping children, stops at the first refusal, reports how many it got.
import json, subprocess, sys

count = json.load(sys.stdin)["count"]
children, refusal = [], None
for _ in range(count):
    try:
        children.append(subprocess.Popen(["sleep", "30"]))
    except OSError as error:
        refusal = f"{type(error).__name__}: {error.strerror}"
        break
for child in children:
    child.kill()
    child.wait()
print(json.dumps({"started": len(children), "refusal": refusal}))
