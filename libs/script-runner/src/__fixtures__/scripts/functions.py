# A module of functions for entryPoint: nothing runs on import; the runner calls one by name.
import asyncio


def greet(data):
    return {"greeting": "hello " + data.get("name", "nobody")}


async def later(data):
    await asyncio.sleep(0)
    return {"later": data.get("n", 0) + 1}


print_on_import = None
