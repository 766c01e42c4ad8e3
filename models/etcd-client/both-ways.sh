#!/usr/bin/env bash
# Checks that user code written against etcd-client 0.21.1 (issue 25) and zookeeper-client
# 0.11.2 (issue 26) compiles both ways: in real mode (no `--cfg madsim`: each drop-in is only
# a re-export of the real crate) and in madsim mode (the drop-ins over coordsim's Raft and
# ZAB stores, the workspace's usual build).
#
# The packages checked: both drop-ins themselves and each in $BOTH_WAYS_PACKAGES (default:
# the small user modules in models/etcd-client/both-ways/ and
# models/zookeeper-client/both-ways/, and the worked examples,
# scenarios/examples/leader-worker and scenarios/examples/zk-lock). Real mode builds etcd-client, which needs
# protoc: Debian's protobuf-compiler is installed if missing, as models/conformance/record.sh
# does. Its own target dir, since the flags differ from the workspace's.
#
# Exit codes: 0 both modes compile; 1 an install or a check failed.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v protoc > /dev/null; then
    echo "both-ways.sh: installing protobuf-compiler with apt-get"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends protobuf-compiler > /dev/null; }; then
        echo "both-ways.sh: could not install protobuf-compiler with apt-get" >&2
        exit 1
    fi
fi

packages=(-p coordsim-etcd-client -p coordsim-zookeeper-client)
for package in ${BOTH_WAYS_PACKAGES:-etcd-client-both-ways zookeeper-client-both-ways leader-worker-example zk-lock-example}; do
    packages+=(-p "$package")
done

started=$(date +%s)
# A RUSTFLAGS variable replaces .cargo/config.toml's `--cfg madsim`: the real client.
RUSTFLAGS="" CARGO_TARGET_DIR="${BOTH_WAYS_TARGET:-/tmp/coordsim-both-ways-target}" \
    cargo check --quiet --locked "${packages[@]}"
real=$(date +%s)
# The config's flags (`--cfg madsim`): the drop-in.
cargo check --quiet --locked "${packages[@]}"
done_at=$(date +%s)
echo "both-ways.sh: ${packages[*]} compile against the real etcd-client and zookeeper-client ($((real - started)) s) and the drop-in ($((done_at - real)) s)"
