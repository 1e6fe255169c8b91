// A module of functions for entryPoint: nothing runs on import; the runner calls one by name.
export function greet(data) {
  return { greeting: `hello ${data.name ?? 'nobody'}` };
}

export async function later(data) {
  await Promise.resolve();
  return { later: (data.n ?? 0) + 1 };
}
