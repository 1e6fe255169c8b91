# Tries a TCP connection to input.host:input.port and reports the outcome.
import json, socket, sys

data = json.load(sys.stdin)
try:
    with socket.create_connection((data["host"], data["port"]), timeout=5) as conn:
        reply = conn.recv(64).decode()
    print(json.dumps({"connected": True, "reply": reply}))
except OSError as error:
    print(json.dumps({"connected": False, "error": f"{type(error).__name__}: {error}"}))
