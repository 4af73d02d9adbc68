#!/usr/bin/env bash
# A CI job for your own training script: run it under benchy (zero edit), keep the log and the result,
# and fail the job
#   - when the run is incomplete or a mode has no counted trial (benchy's exit status: benchy --help),
#   - when the verdict matches FAIL_ON_VERDICT (an extended regular expression on the text after
#     "VERDICT "; default: ^data loading limits training; empty: never),
#   - when a mode regressed against the stored baseline (benchy compare: exit 1).
# A missing baseline is written from this run: commit it, and later runs are compared against it.
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

$benchy run -- "$@" | tee benchy.log
status=${PIPESTATUS[0]}
if ((status != 0)); then
  echo "ci: the benchmarked run ended with status $status (benchy --help lists them); see benchy.log" >&2
  exit 1
fi
value() { sed -nE "s/^BENCHY::SUMMARY::$1 average trial throughput: ([0-9.]+).*/\1/p" benchy.log | tail -1; }
echo "ci: IO=$(value IO) SYNTHETIC=$(value SYNTHETIC) FULL=$(value FULL) samples/s"
verdict=$(grep '^BENCHY::SUMMARY::VERDICT ' benchy.log | tail -1)
echo "ci: ${verdict#BENCHY::SUMMARY::}"
if [[ -n $fail_on ]] && grep -qE -- "$fail_on" <<<"${verdict#BENCHY::SUMMARY::VERDICT }"; then
  echo "ci: the verdict matches '$fail_on' (FAIL_ON_VERDICT)" >&2
  exit 1
fi
if [[ ! -f $baseline ]]; then
  cp benchy_result.json "$baseline"
  echo "ci: no baseline yet: this run is written to $baseline (commit it)"
  exit 0
fi
$benchy compare "$baseline" benchy_result.json || { echo "ci: a mode regressed against $baseline" >&2; exit 1; }
