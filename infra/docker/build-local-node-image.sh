#!/usr/bin/env bash
# Builds a stand-in for node:24-slim from this machine's node, npm and a shell (with the shared libraries
# ldd lists, the host's trusted CA certificates and a `node` user, uid 1000), with `docker import`: no
# registry needed. It lets a machine without one build the gateway, assembler and recall images of
# infra/docker/Dockerfile; not the executor's, whose stage installs Debian packages with apt. Prints the
# image name on stdout.
#   docker build --network host -f infra/docker/Dockerfile --target gateway \
#     --build-arg NODE_IMAGE=$(infra/docker/build-local-node-image.sh) -t agentmesh/gateway:local .
#   usage: infra/docker/build-local-node-image.sh [image-name]
set -euo pipefail

image="${1:-agentmesh/node-local:latest}"
node_bin="$(readlink -f "$(command -v node)")"
npm_cli="$(readlink -f "$(command -v npm)")"
npm_dir="$(dirname "$(dirname "$npm_cli")")"
ca_bundle="${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}"
version="node $("$node_bin" --version), npm $(node "$npm_cli" --version)"

# Reuse the image when it was built from this same node and npm.
if docker image inspect "$image" >/dev/null 2>&1; then
  built_from="$(docker image inspect -f '{{ index .Config.Labels "agentmesh.node.version" }}' "$image" 2>/dev/null || true)"
  if [ "$built_from" = "$version" ]; then
    echo "$image"
    exit 0
  fi
fi

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/local/bin" "$root/usr/local/lib/node_modules" "$root/bin" "$root/usr/bin" \
  "$root/tmp" "$root/etc/ssl/certs" "$root/home/node" "$root/root"
chmod 1777 "$root/tmp"
cp "$node_bin" "$root/usr/local/bin/node"
cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
# npm runs scripts with sh; package bins start with `#!/usr/bin/env node`; the Dockerfile uses find.
cp "$(readlink -f /bin/sh)" "$root/bin/sh"
cp "$(readlink -f "$(command -v env)")" "$root/usr/bin/env"
cp "$(readlink -f "$(command -v find)")" "$root/usr/bin/find"
for binary in "$node_bin" /bin/sh "$(command -v env)" "$(command -v find)"; do
  for lib in $(ldd "$(readlink -f "$binary")" 2>/dev/null | grep -oE '/[^ ]+' || true); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
done
# The CAs this machine trusts (an egress proxy's included), so npm inside the build reaches the registry.
if [ -r "$ca_bundle" ]; then cp "$ca_bundle" "$root/etc/ssl/certs/ca-certificates.crt"; fi
printf 'root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nnode:x:1000:\n' >"$root/etc/group"
chown 1000:1000 "$root/home/node"

tar -C "$root" -c . | docker import \
  -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  -c 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  -c "LABEL agentmesh.node.version=\"$version\"" \
  - "$image" >/dev/null
echo "$image"
