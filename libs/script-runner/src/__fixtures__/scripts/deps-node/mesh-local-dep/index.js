// A tiny package the dependency tests install through a local file: dependency.
export function greet(name) {
  return `hello ${name} from mesh-local-dep`;
}
