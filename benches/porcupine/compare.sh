#!/usr/bin/env bash
# coordsim's linearizability checker against Porcupine on Porcupine's Jepsen etcd logs:
# the same logs, the same verdicts (required), CPU time side by side in one run.
#
#   bash benches/porcupine/compare.sh PORCUPINE_CHECKOUT [ROUNDS] [PAIRS]
#
# PORCUPINE_CHECKOUT: a clone of github.com/anishathalye/porcupine (its test_data/jepsen
# holds the logs). Needs Go (Debian: golang-go) and /usr/bin/time. Each side parses every
# log once, then checks them all ROUNDS times (default 10) in one process; the two processes
# run in turn PAIRS times (default 5), and the medians of their CPU times (user + system,
# the kernel's accounting of each finished process) are compared.
set -euo pipefail
porcupine=${1:?usage: compare.sh PORCUPINE_CHECKOUT [ROUNDS] [PAIRS]}
rounds=${2:-10}
pairs=${3:-5}
[ -d "$porcupine/test_data/jepsen" ] || {
  echo "$porcupine: no test_data/jepsen (expected a Porcupine checkout)" >&2
  exit 2
}
command -v go >/dev/null || { echo "go not found (Debian: apt-get install golang-go)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cp -r "$porcupine" "$work/porcupine"
cp "$here/jepsen_all_test.go" "$work/porcupine/"
(cd "$work/porcupine" && GOFLAGS=-mod=mod GOPROXY=off go test -c -o "$work/porcupine.test" .)
(cd "$top" && cargo build --quiet --release -p coordsim-benches --example jepsen_logs)
ours="$top/target/release/examples/jepsen_logs"
logs="$work/porcupine/test_data/jepsen"

# One timed run: prints the CPU seconds; the verdicts go to $2.
cpu_of() {
  local out=$1
  shift
  /usr/bin/time -f "%U %S" -o "$work/time" "$@" >"$out"
  awk '{ printf "%.3f\n", $1 + $2 }' "$work/time"
}
: >"$work/porcupine.cpu"
: >"$work/coordsim.cpu"
for _ in $(seq "$pairs"); do
  (cd "$work/porcupine" && COORDSIM_ROUNDS=$rounds cpu_of "$work/porcupine.out" \
    "$work/porcupine.test" -test.run TestCoordsimAllJepsenEtcdLogs) >>"$work/porcupine.cpu"
  COORDSIM_ROUNDS=$rounds cpu_of "$work/coordsim.out" "$ours" "$logs" >>"$work/coordsim.cpu"
done
if ! diff <(grep '^etcd_' "$work/porcupine.out") <(grep '^etcd_' "$work/coordsim.out") >"$work/diff"; then
  echo "the verdicts differ (< Porcupine, > coordsim):" >&2
  cat "$work/diff" >&2
  exit 1
fi
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
porcupine_s=$(median "$work/porcupine.cpu")
coordsim_s=$(median "$work/coordsim.cpu")
grep -E 'logs,' "$work/coordsim.out"
echo "verdicts: the same on every log"
echo "CPU seconds per run (median of $pairs, $rounds rounds each): Porcupine $porcupine_s, coordsim $coordsim_s"
awk -v p="$porcupine_s" -v c="$coordsim_s" 'BEGIN { printf "coordsim is %.2fx faster\n", p / c }'
