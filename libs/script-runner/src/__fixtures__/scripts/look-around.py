# Reports what the script can see: input.read is a list of files to read, input.list a list of
# directories to list ($VARIABLES are expanded). Each answer is the content/listing or the error.
import json, os, sys

data = json.load(sys.stdin)


def attempt(action, path):
    try:
        return {"ok": action(os.path.expandvars(path))}
    except OSError as error:
        return {"error": f"{type(error).__name__}: {error.strerror}"}


def read(path):
    with open(path) as handle:
        return handle.read()


results = {
    "read": {path: attempt(read, path) for path in data.get("read", [])},
    "list": {path: attempt(lambda p: sorted(os.listdir(p)), path) for path in data.get("list", [])},
    "home": os.environ.get("HOME"),
    "uid": os.getuid(),
}
print(json.dumps(results))
