"""What runs inside the training process: trial loops, batch sources, sample counting, device sync and
copies, NVTX and the profiler window, the system sampler, ranks. torch is imported only where needed."""
