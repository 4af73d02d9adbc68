#!/usr/bin/env bash
# A CI job for your own training script: run it under benchy (zero edit), keep the log and the result,
# and fail the job
#   - when the script fails, the run is incomplete, or a mode has no counted trial (benchy run's status,
#     then benchy check on the result file; benchy --help lists the statuses),
#   - when the verdict matches FAIL_ON_VERDICT (an extended regular expression on the text after
#     "VERDICT "; default: ^data loading limits training; empty: never),
#   - when a mode regressed against the stored baseline.
# A missing baseline is written from this run: commit it, and later runs are compared against it.
# SIGTERM, SIGINT and SIGHUP sent to this script (a CI runner cancelling the job, Slurm's preemption) reach
# the training script: benchy run passes them on, and this script passes them to benchy run.
#
#   bash examples/ci_check.sh BASELINE.json -- python train.py ARGS...
#
# The schedule is examples/ci_small.yaml unless BENCHY_CONFIG_FILE names another; BENCHY (default:
# benchy) is the command.
set -uo pipefail
baseline=${1:?usage: ci_check.sh BASELINE.json -- python train.py ARGS...}
shift
[[ ${1:-} == -- ]] && shift
(($#)) || { echo "ci: no command to run after --" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
benchy=${BENCHY:-benchy}
fail_on=${FAIL_ON_VERDICT-^data loading limits training}
export BENCHY_CONFIG_FILE=${BENCHY_CONFIG_FILE:-$here/ci_small.yaml}

# The run in the background, so that this shell can pass on the signals it receives while it waits (a
# shell waiting for a command in the foreground runs its traps only after the command has ended).
$benchy run -- "$@" > >(tee benchy.log) 2>&1 &
run=$!
for signal in TERM INT HUP; do
  trap 'kill -'"$signal"' "$run" 2>/dev/null' "$signal"
done
while :; do
  wait "$run"
  status=$?
  kill -0 "$run" 2>/dev/null || break # a trap interrupted the wait: the run goes on
done
trap - TERM INT HUP
wait # tee has written the whole log
if ((status != 0)); then
  echo "ci: the benchmarked run ended with status $status (benchy --help lists them); see benchy.log" >&2
  exit "$status"
fi
value() { sed -nE "s/^BENCHY::SUMMARY::$1 average trial throughput: ([0-9.]+).*/\1/p" benchy.log | tail -1; }
echo "ci: IO=$(value IO) SYNTHETIC=$(value SYNTHETIC) FULL=$(value FULL) samples/s"
verdict=$(grep '^BENCHY::SUMMARY::VERDICT ' benchy.log | tail -1)
echo "ci: ${verdict#BENCHY::SUMMARY::}"
check=(check benchy_result.json)
[[ -n $fail_on ]] && check+=(--fail-on-verdict "$fail_on")
[[ -f $baseline ]] && check+=(--baseline "$baseline")
$benchy "${check[@]}" || {
  status=$?
  echo "ci: benchy check failed with status $status (the lines above say why)" >&2
  exit "$status"
}
if [[ ! -f $baseline ]]; then
  cp benchy_result.json "$baseline"
  echo "ci: no baseline yet: this run is written to $baseline (commit it)"
fi
