#!/usr/bin/env bash
# The device check, on a machine with one NVIDIA GPU (nothing here runs in CI):
#
#   bash benchmarks/gpu_check.sh OUT_DIR [WHEELS_DIR] [NVTX_INCLUDE_DIR]
#
# 1. the demo on CUDA unwrapped (the plain loop's samples/s per epoch) and wrapped (IO, SYNTHETIC, FULL), in the
#    same call; 2. that NVTX ranges and cudaProfilerStart/Stop reach the NVTX injection interface and the CUDA
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

# 1. unwrapped: the plain loop's own samples/s, epoch by epoch
timeout 120 $DEMO --num_epochs 4 > "$OUT_DIR/plain.txt" 2>&1
echo "status $?" >> "$OUT_DIR/plain.txt"

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
