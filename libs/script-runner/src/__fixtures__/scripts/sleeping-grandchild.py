# Starts a grandchild that sleeps for ten minutes (tagged with input.marker so a test can look for it
# in /proc), moves it to its own session, then sleeps itself until it is killed.
import json, subprocess, sys, time

marker = json.load(sys.stdin)["marker"]
code = "import os, subprocess, time; os.setsid(); subprocess.Popen(['sleep', '600']); time.sleep(600)"
subprocess.Popen([sys.executable, "-c", code, marker])
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker])
time.sleep(600)
