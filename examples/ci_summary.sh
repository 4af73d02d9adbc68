#!/usr/bin/env bash
# What a CI job does with benchy: run the training script, keep the log, extract the three
# summary numbers, and fail the job if one is missing or FULL falls below a floor.
#   bash examples/ci_summary.sh [python] [min FULL samples/s]
set -euo pipefail
python=${1:-python}
min_full=${2:-0}
here=$(cd "$(dirname "$0")" && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT

BENCHY_CONFIG_FILE="$here/ci_small.yaml" "$python" "$here/train_cnn.py" --enable_benchy --num_epochs 8 | tee "$log"

# The original tool printed "BENCHY::SUMMARY:: SYNTHETIC" with a space; \s* accepts both.
value() {
  sed -nE "s/^BENCHY::SUMMARY::[[:space:]]*$1 average trial throughput: ([0-9.]+).*/\1/p" "$log" | tail -1
}
io=$(value IO); synthetic=$(value SYNTHETIC); full=$(value FULL)
for name in io synthetic full; do
  [[ -n ${!name} ]] || { echo "ci: no $name summary line in the log" >&2; exit 1; }
done
echo "ci: IO=$io SYNTHETIC=$synthetic FULL=$full samples/s"
awk -v f="$full" -v m="$min_full" 'BEGIN { exit !(f >= m) }' || { echo "ci: FULL $full < floor $min_full" >&2; exit 1; }
