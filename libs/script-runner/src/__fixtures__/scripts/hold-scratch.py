# Writes input.canary to $HOME/secret.txt, says "ready" on the fifo input.ready, waits for a line on the
# fifo input.gate, then reads its file back: a second run can look for the file in the meantime.
import json, os, sys

data = json.load(sys.stdin)
secret = os.path.join(os.environ["HOME"], "secret.txt")
with open(secret, "w") as handle:
    handle.write(data["canary"])
with open(data["ready"], "w") as ready:
    ready.write("ready\n")
with open(data["gate"]) as gate:
    gate.readline()
with open(secret) as handle:
    print(json.dumps({"own": handle.read()}))
