#!/usr/bin/env bash
# The device check, on a machine with one NVIDIA GPU (nothing here runs in CI):
#
#   bash benchmarks/gpu_check.sh OUT_DIR [WHEELS_DIR] [NVTX_INCLUDE_DIR]
#
# 1. the demo on CUDA unwrapped (the plain loop's samples/s per epoch, and between its epochs' start-ups), its
#    loader alone (--loader_only), wrapped (IO, SYNTHETIC, FULL) by the one-line edit with the demo's own settings and
#    by `benchy run` with benchy's defaults, then unwrapped and the loader alone again, in the same call, and the
#    figures side by side (accuracy.txt); 2. that NVTX ranges and cudaProfilerStart/Stop reach the NVTX injection interface and the CUDA
#    runtime: tests/nvtx/recorder.c loaded as Nsight Systems loads its own (NVTX_INJECTION64_PATH), and
#    benchmarks/cudaprof_shim.c preloaded in front of libcudart, logging each call and what CUDA returned;
#    3. the GPU paths: IO_H2D, NVML (GPU readings and energy), the FLOPs and MFU against the peak table, and
#    torch.profiler with its CUDA kernels. WHEELS_DIR: wheels of packages the machine lacks (nvtx), installed into
#    /tmp/site; NVTX_INCLUDE_DIR: the NVTX v3 headers (the nvtx source distribution's include/), else CUDA's.
set -u
OUT_DIR=${1:?OUT_DIR}
WHEELS=${2:-}
INCLUDE=${3:-}
REPO=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT_DIR" /tmp/gpu_check
export PYTHONUNBUFFERED=1 PYTHONPATH="$REPO"
if [ -n "$WHEELS" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl
    export PYTHONPATH="/tmp/site:$REPO"
fi
if [ -z "$INCLUDE" ]; then INCLUDE=$(dirname "$(dirname "$(ls /usr/local/cuda*/include/nvtx3/nvToolsExt.h | head -1)")"); fi
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c "import sys, torch, benchy; print(sys.version.split()[0], torch.__version__, torch.cuda.get_device_name(), benchy.__version__)"
} > "$OUT_DIR/machine.txt" 2>&1
cc -shared -fPIC -O2 -I"$INCLUDE" -o /tmp/gpu_check/recorder.so "$REPO/tests/nvtx/recorder.c" \
    && cc -shared -fPIC -O2 -o /tmp/gpu_check/cudaprof.so "$REPO/benchmarks/cudaprof_shim.c" -ldl \
    || echo "building the recorder or the shim failed" >> "$OUT_DIR/machine.txt"
cd /tmp/gpu_check || exit 1
DEMO="python3 $REPO/examples/train_cnn.py --device ${DEVICE:-cuda} --num_workers ${WORKERS:-8}"

# 1. unwrapped: the plain loop's own samples/s, epoch by epoch (and between start-ups), and its loader alone
timeout 120 $DEMO --num_epochs 4 > "$OUT_DIR/plain.txt" 2>&1
echo "status $?" >> "$OUT_DIR/plain.txt"
timeout 90 $DEMO --num_epochs 4 --loader_only > "$OUT_DIR/loader.txt" 2>&1
echo "status $?" >> "$OUT_DIR/loader.txt"

# 2. wrapped, the default configuration, with the NVTX recorder and the cudaProfiler shim in place
rm -f nvtx.txt cudaprof.txt
NVTX_INJECTION64_PATH=/tmp/gpu_check/recorder.so NVTX_RECORD_FILE=/tmp/gpu_check/nvtx.txt \
    LD_PRELOAD=/tmp/gpu_check/cudaprof.so CUDAPROF_LOG=/tmp/gpu_check/cudaprof.txt \
    timeout 240 $DEMO --enable_benchy > "$OUT_DIR/wrapped.txt" 2>&1
echo "status $?" >> "$OUT_DIR/wrapped.txt"
{
    echo "== cudaProfilerStart/Stop as the CUDA runtime answered them (shim log)"
    cat cudaprof.txt 2>/dev/null || echo "no call reached the shim"
    echo "== NVTX: ranges pushed through the injection interface, by domain and name (step/fetch indices folded)"
    sed -E 's/\t[0-9]+$//; s/_[0-9]+(\t|$)/_k\1/' nvtx.txt 2>/dev/null | sort | uniq -c | sort -rn | head -40
    echo "== the first 12 records"
    head -12 nvtx.txt 2>/dev/null
} > "$OUT_DIR/reached.txt"
cp benchy_result.json "$OUT_DIR/wrapped.json" 2>/dev/null

# 1b. benchy's own defaults, zero edit; then the truth again (the same minutes), and the figures side by side
# (the demo plans 10 epochs when it cannot see benchy; 40 leave the schedule room: benchy ends the run once it knows)
timeout 240 python3 -m benchy run -- $DEMO --num_epochs 40 > "$OUT_DIR/defaults.txt" 2>&1
echo "status $?" >> "$OUT_DIR/defaults.txt"
cp benchy_result.json "$OUT_DIR/defaults.json" 2>/dev/null
timeout 120 $DEMO --num_epochs 4 > "$OUT_DIR/plain_after.txt" 2>&1
echo "status $?" >> "$OUT_DIR/plain_after.txt"
timeout 90 $DEMO --num_epochs 4 --loader_only > "$OUT_DIR/loader_after.txt" 2>&1
echo "status $?" >> "$OUT_DIR/loader_after.txt"
python3 - "$OUT_DIR" > "$OUT_DIR/accuracy.txt" 2>&1 <<'EOF'
import json, re, statistics, sys
out = sys.argv[1]
def steady(name):  # the epochs after the first, between their start-ups
    text = open(f"{out}/{name}").read()
    rates = [float(x) for x in re.findall(r"\(([0-9.]+) between start-ups\)", text)[1:]]
    return statistics.mean(rates) if rates else float("nan")
truth = {"FULL": (steady("plain.txt") + steady("plain_after.txt")) / 2}
truth["IO"] = (steady("loader.txt") + steady("loader_after.txt")) / 2
print("truth (mean of before and after):", {k: round(v, 1) for k, v in truth.items()})
for name in ("wrapped", "defaults"):
    try:
        doc = json.load(open(f"{out}/{name}.json"))
    except OSError:
        print(name, "no JSON")
        continue
    for mode in ("IO", "SYNTHETIC", "FULL"):
        mean, half = doc[mode]["mean"], doc[mode]["interval"]
        err = f", {100 * (mean / truth[mode] - 1):+.1f} % against the truth" if mode in truth else ""
        width = f"+/- {half:.1f} ({100 * half / mean:.1f} %)" if half is not None else "no interval"
        print(f"{name} {mode}: {mean:.1f} {width}{err}, trials {doc[mode]['nbatches']}")
    s = doc["schedule"]
    print(
        f"{name}: decided at {s.get('decided_steps')} steps / {s.get('decided_seconds')} s, final figures at "
        f"{s.get('measuring_steps')} steps / {s.get('measuring_seconds')} s; loader_round {s.get('loader_round')}; "
        f"imprecise {s.get('imprecise')}"
    )
EOF

# 3. torch.profiler on one extra FULL warm-up: its CUDA kernels in the trace
cat > torch.yaml <<'EOF'
global: {profiler: torch, profiler_steps: 3, output_filename: torch_result.json, whatif: false, stages: false}
EOF
timeout 180 $DEMO --enable_benchy --benchy_config torch.yaml > "$OUT_DIR/torchprof.txt" 2>&1
echo "status $?" >> "$OUT_DIR/torchprof.txt"
python3 - >> "$OUT_DIR/torchprof.txt" 2>&1 <<'EOF'
import collections, glob, json
for path in sorted(glob.glob("*.profile/*.json")):
    events = json.load(open(path)).get("traceEvents", [])
    cats = collections.Counter(e.get("cat") for e in events if e.get("ph") == "X")
    kernels = collections.Counter(e["name"][:60] for e in events if e.get("cat") == "kernel")
    steps = sorted({e["name"] for e in events if e.get("cat") == "user_annotation"})
    print(path, "events by category:", dict(cats.most_common(8)))
    print("  annotations:", steps[:8], " kernels:", sum(kernels.values()), "most frequent:", kernels.most_common(4))
EOF
