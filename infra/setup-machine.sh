# shellcheck shell=bash
# Prepares a machine for agentmesh development and CI. Source it: `source infra/setup-machine.sh`.
#   1. Node >= 22 (installs the `node@24` npm package into a cache folder when the system node is older)
#   2. nats-server, the Docker engine and chromium (the web console's browser test) from Debian's
#      packages when missing
#   3. starts dockerd (host networking only) when `docker info` fails
#   4. builds a local NATS image from the nats-server binary and exports AGENTMESH_NATS_IMAGE
#   5. exports the testcontainers settings for a registry-less, loopback-only machine
# Idempotent: a second run finds everything in place and changes nothing.

_am_log() { printf '[setup] %s\n' "$*" >&2; }
_am_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_am_cache="${AGENTMESH_CACHE_DIR:-$HOME/.cache/agentmesh}"
mkdir -p "$_am_cache"

_am_sudo() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# 1. Node >= 22.12
_am_node_ok() {
  command -v node >/dev/null 2>&1 &&
    node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=12)?0:1)'
}
if ! _am_node_ok; then
  _am_nodedir="$_am_cache/node24"
  if [ ! -x "$_am_nodedir/node_modules/node/bin/node" ]; then
    _am_log "node $(node --version 2>/dev/null || echo none) is older than 22.12: installing node@24 from the npm registry into $_am_nodedir"
    mkdir -p "$_am_nodedir"
    (cd "$_am_nodedir" && npm init -y >/dev/null 2>&1 && npm install --no-audit --no-fund node@24 >&2)
  fi
  export PATH="$_am_nodedir/node_modules/node/bin:$_am_nodedir/node_modules/.bin:$PATH"
  hash -r
fi
_am_node_ok || { _am_log "could not get Node >= 22.12"; return 1 2>/dev/null || exit 1; }
_am_log "node $(node --version), npm $(npm --version 2>/dev/null)"

# 2. nats-server and docker; the script sandbox's tools (unshare, pivot_root, setpriv, prlimit; ip);
#    chromium, which tests/mesh drives headless to test the web console
_am_packages=()
command -v nats-server >/dev/null 2>&1 || _am_packages+=(nats-server)
command -v dockerd >/dev/null 2>&1 || _am_packages+=(docker.io)
{ command -v unshare && command -v pivot_root && command -v setpriv && command -v prlimit; } >/dev/null 2>&1 ||
  _am_packages+=(util-linux)
command -v ip >/dev/null 2>&1 || _am_packages+=(iproute2)
[ -x /usr/bin/chromium ] || _am_packages+=(chromium)
if [ "${#_am_packages[@]}" -gt 0 ]; then
  _am_log "installing ${_am_packages[*]} from Debian's packages"
  _am_sudo apt-get update >&2
  DEBIAN_FRONTEND=noninteractive _am_sudo apt-get install -y "${_am_packages[@]}" >&2
fi

# 3. the Docker engine
if ! docker info >/dev/null 2>&1; then
  _am_log "starting dockerd (no bridge, no iptables: containers use host networking)"
  _am_sudo sh -c 'nohup dockerd --bridge=none --iptables=false --ip-masq=false >/var/log/agentmesh-dockerd.log 2>&1 &'
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || { _am_log "dockerd did not come up; see /var/log/agentmesh-dockerd.log"; return 1 2>/dev/null || exit 1; }
fi
_am_log "docker engine $(docker version -f '{{.Server.Version}}' 2>/dev/null)"

# 4. the local NATS image
AGENTMESH_NATS_IMAGE="$("$_am_root/infra/build-nats-image.sh")" || { _am_log "building the NATS image failed"; return 1 2>/dev/null || exit 1; }
export AGENTMESH_NATS_IMAGE
_am_log "AGENTMESH_NATS_IMAGE=$AGENTMESH_NATS_IMAGE ($(nats-server --version))"

# 5. testcontainers on a registry-less, loopback-only machine
export TESTCONTAINERS_RYUK_DISABLED=true
export TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1
