# Complains on stderr and exits with code 3.
import sys

sys.stderr.write("something went wrong in the script\n")
sys.exit(3)
