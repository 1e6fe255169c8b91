# Prints text that is not JSON.
print("hello, this is not JSON")
