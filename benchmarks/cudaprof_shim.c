/* An LD_PRELOAD shim for the device check (benchmarks/gpu_check.sh): logs each cudaProfilerStart/Stop call that
 * reaches the CUDA runtime's symbols, forwards it to the real one (dlsym RTLD_NEXT) and logs what CUDA returned,
 * to the file named by CUDAPROF_LOG. Nsight Systems' capture range starts and stops at these same calls. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*call_t)(void);

static void logged(const char *name, int status) {
    const char *path = getenv("CUDAPROF_LOG");
    FILE *f = fopen(path ? path : "/dev/stderr", "a");
    if (!f) return;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    fprintf(f, "%ld.%09ld %s -> %d%s\n", (long)t.tv_sec, t.tv_nsec, name, status, status == 0 ? " (cudaSuccess)" : "");
    fclose(f);
}

static int forward(const char *name) {
    call_t real = (call_t)dlsym(RTLD_NEXT, name);
    int status = real ? real() : -1; /* -1: no CUDA runtime below this shim */
    logged(name, status);
    return status;
}

int cudaProfilerStart(void) { return forward("cudaProfilerStart"); }
int cudaProfilerStop(void) { return forward("cudaProfilerStop"); }
