# Never runs: its requirement cannot be installed.
print("{}")
