# Tries each of input.attempts ({via, host, port}) and reports what it got:
#   direct:  a TCP connection of its own;
#   connect: a CONNECT tunnel through the proxy named in HTTPS_PROXY;
#   http:    GET http://host:port/ with urllib, which uses HTTP_PROXY when it is set.
import json, os, socket, sys, urllib.parse, urllib.request

data = json.load(sys.stdin)


def direct(host, port):
    with socket.create_connection((host, port), timeout=5) as conn:
        return conn.recv(64).decode()


def tunnel(host, port):
    proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
    with socket.create_connection((proxy.hostname, proxy.port), timeout=5) as conn:
        conn.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(4096)
            if not chunk:
                break
            head += chunk
        status, _, rest = head.partition(b"\r\n\r\n")
        status_line = status.split(b"\r\n", 1)[0].decode()
        if " 200 " not in status_line:
            raise ConnectionRefusedError(f"proxy answered {status_line}")
        return (rest + conn.recv(64)).decode()


def fetch(host, port):
    with urllib.request.urlopen(f"http://{host}:{port}/", timeout=5) as response:
        return response.read().decode()


ways = {"direct": direct, "connect": tunnel, "http": fetch}
results = {}
for attempt in data["attempts"]:
    key = f"{attempt['via']} {attempt['host']}:{attempt['port']}"
    try:
        results[key] = {"ok": ways[attempt["via"]](attempt["host"], attempt["port"])}
    except Exception as error:
        results[key] = {"error": f"{type(error).__name__}: {error}"}
print(json.dumps(results))
