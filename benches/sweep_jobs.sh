#!/usr/bin/env bash
# `coordsim sweep --jobs J` against J independent `--jobs 1` processes over the same seeds,
# measured side by side, in turn, several rounds (issue 27, item 5: --jobs J within 5% of J
# processes).
#
# Usage: bash benches/sweep_jobs.sh [COORDSIM] [SCENARIO] [SEEDS] [JOBS] [ROUNDS]
#   defaults: target/release/coordsim raft_swarm_5 120 2 5
#
# Each round runs, in an order that alternates from round to round:
#   threads:   one process, `sweep --scenario S --seeds N --jobs J`
#   processes: J processes at once, `sweep --scenario S --seeds N --shard K/J --jobs 1`
#              (K = 0..J-1: the same N seeds between them), timed until the last ends.
# It prints each round's seeds per wall second and user CPU seconds, then the medians and
# the ratio threads / processes of seeds per second (1.00 = as fast as J processes). Both
# sides must exit as a clean sweep does (0); the script stops otherwise. Wall-clock figures
# move with the machine's load: give `uptime` with them.
set -euo pipefail

coordsim=${1:-target/release/coordsim}
scenario=${2:-raft_swarm_5}
seeds=${3:-120}
jobs=${4:-2}
rounds=${5:-5}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Runs its arguments under GNU time; appends "wall_s user_s" of the run to $scratch/$1.
timed() {
  local log=$1
  shift
  /usr/bin/time -f '%e %U' -o "$scratch/time.$$.$BASHPID" "$@" >/dev/null 2>"$scratch/err.$BASHPID" || {
    echo "failed: $* (stderr: $(tail -1 "$scratch/err.$BASHPID"))" >&2
    return 1
  }
  cat "$scratch/time.$$.$BASHPID" >>"$scratch/$log"
}

threads_round() {
  : >"$scratch/threads.round"
  timed threads.round "$coordsim" sweep --scenario "$scenario" --seeds "$seeds" --jobs "$jobs"
  read -r wall user <"$scratch/threads.round"
  echo "$wall $user" >>"$scratch/threads"
  printf 'round %d threads:   %6.1f seeds/s  (wall %5.2f s, user %5.2f s)\n' \
    "$round" "$(echo "$seeds / $wall" | bc -l)" "$wall" "$user"
}

processes_round() {
  : >"$scratch/processes.round"
  local start end pids=()
  start=$(date +%s.%N)
  for ((shard = 0; shard < jobs; shard++)); do
    timed processes.round "$coordsim" sweep --scenario "$scenario" --seeds "$seeds" \
      --shard "$shard/$jobs" --jobs 1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  end=$(date +%s.%N)
  local wall user
  wall=$(echo "$end - $start" | bc -l)
  user=$(awk '{ sum += $2 } END { print sum }' "$scratch/processes.round")
  echo "$wall $user" >>"$scratch/processes"
  printf 'round %d processes: %6.1f seeds/s  (wall %5.2f s, user %5.2f s)\n' \
    "$round" "$(echo "$seeds / $wall" | bc -l)" "$wall" "$user"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "sweep --jobs $jobs against $jobs processes: $scenario, $seeds seeds, $rounds rounds ($(uptime | sed 's/.*load/load/'))"
for ((round = 1; round <= rounds; round++)); do
  if ((round % 2)); then threads_round; processes_round; else processes_round; threads_round; fi
done

threads_rate=$(awk -v n="$seeds" '{ print n / $1 }' "$scratch/threads" | median)
processes_rate=$(awk -v n="$seeds" '{ print n / $1 }' "$scratch/processes" | median)
threads_user=$(awk '{ print $2 }' "$scratch/threads" | median)
processes_user=$(awk '{ print $2 }' "$scratch/processes" | median)
printf 'median threads:   %6.1f seeds/s, user %5.2f s\n' "$threads_rate" "$threads_user"
printf 'median processes: %6.1f seeds/s, user %5.2f s\n' "$processes_rate" "$processes_user"
printf 'threads / processes: %.3f of the seeds per second, %.3f of the user CPU time\n' \
  "$(echo "$threads_rate / $processes_rate" | bc -l)" "$(echo "$threads_user / $processes_user" | bc -l)"
echo "($(uptime | sed 's/.*load/load/'))"
