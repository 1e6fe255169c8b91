"""A tiny package the dependency tests install from a locally built wheel."""


def greet(name):
    return f"hello {name} from meshdep"
