#!/usr/bin/env bash
# Builds a NATS container image from this machine's nats-server binary and the shared libraries
# ldd lists, with `docker import` (no registry needed). Prints the image name on stdout.
#   usage: infra/build-nats-image.sh [image-name]
set -euo pipefail

image="${1:-agentmesh/nats-local:latest}"
bin="$(command -v nats-server || true)"
if [ -z "$bin" ]; then
  echo "build-nats-image: nats-server is not installed" >&2
  exit 1
fi
version="$("$bin" --version 2>/dev/null | head -n1)"

# Reuse the image when it was built from this same binary.
if docker image inspect "$image" >/dev/null 2>&1; then
  built_from="$(docker image inspect -f '{{ index .Config.Labels "agentmesh.nats.version" }}' "$image" 2>/dev/null || true)"
  if [ "$built_from" = "$version" ]; then
    echo "$image"
    exit 0
  fi
fi

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/tmp" "$root/data"
chmod 1777 "$root/tmp"
cp "$bin" "$root/bin/nats-server"
# Copy every shared library the binary needs (a static binary lists none), keeping their paths.
for lib in $(ldd "$bin" 2>/dev/null | grep -oE '/[^ ]+' || true); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done

tar -C "$root" -cf - . | docker import \
  --change 'ENTRYPOINT ["/bin/nats-server"]' \
  --change 'WORKDIR /data' \
  --change "LABEL agentmesh.nats.version=\"$version\"" \
  - "$image" >/dev/null
echo "$image"
