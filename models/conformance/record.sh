#!/usr/bin/env bash
# Records the conformance probes against the real servers (README.md, "The probe file"):
# installs what is missing from Debian's packages, builds the recorder, runs every probe in
# probes/zk and probes/etcd against a freshly started ZooKeeper 3.8 / etcd 3.4 on loopback, and
# fails when a live answer differs from the committed one (the diff is printed): the committed
# answers must be what a real server says today.
#
# Exit codes: 0 all answers as committed; 1 an install, a build, a server or a probe failed, or
# an answer changed; 2 a malformed probe file (the recorder's one line).
set -euo pipefail
cd "$(dirname "$0")"
started=$(date +%s)

missing=()
[ -f /usr/share/java/zookeeper.jar ] && command -v java > /dev/null || missing+=(zookeeper)
command -v etcd > /dev/null || missing+=(etcd-server)
command -v protoc > /dev/null || missing+=(protobuf-compiler)
# etcd-client's protos import protobuf's well-known types (descriptor.proto, struct.proto):
# Debian ships them in libprotobuf-dev, which protobuf-compiler only recommends.
[ -f /usr/include/google/protobuf/descriptor.proto ] || missing+=(libprotobuf-dev)
if [ ${#missing[@]} -gt 0 ]; then
    echo "record.sh: installing ${missing[*]} with apt-get"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null; }; then
        echo "record.sh: could not install ${missing[*]} with apt-get" >&2
        exit 1
    fi
fi
installed=$(date +%s)

# The repository's .cargo/config.toml builds everything with `--cfg madsim` (simulated tokio and
# network); a RUSTFLAGS variable replaces it, so the recorder gets real sockets.
# A debug build: the probes wait on servers and sleeps, not on the recorder, and it builds in
# about two thirds of a release build's CPU time.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/tmp/coordsim-recorder-target}"
RUSTFLAGS="" cargo build --quiet --locked --manifest-path recorder/Cargo.toml
# Its own unit tests (the command line, the probe files, the ports); the dependencies are the
# build's, so only the recorder itself compiles again.
RUSTFLAGS="" cargo test --quiet --locked --manifest-path recorder/Cargo.toml
recorder="$CARGO_TARGET_DIR/debug/conformance-recorder"
built=$(date +%s)

for store in zk etcd; do
    store_started=$(date +%s)
    "$recorder" --store "$store" "probes/$store"
    echo "record.sh: $store took $(($(date +%s) - store_started)) s"
done
echo "record.sh: install $((installed - started)) s, build $((built - installed)) s, probes $(($(date +%s) - built)) s"

if ! git diff --quiet -- probes; then
    echo "record.sh: the live answers differ from the committed ones:" >&2
    git --no-pager diff --stat -- probes >&2
    git --no-pager diff -- probes >&2
    exit 1
fi
echo "record.sh: every answer is as committed"
