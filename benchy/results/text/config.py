"""What each configuration key does, in words, per section (no torch): the documentation's configuration reference
is generated from these, the rules' allowed values (:data:`benchy.core.config_rules.RULES`) and the defaults;
``tests/results/test_keys.py`` keeps the three in step."""

from __future__ import annotations

from typing import Dict

__all__ = ["MEANINGS"]

MEANINGS: Dict[str, Dict[str, str]] = {
    "mode": {
        "run_benchmark": "run this mode's trials (at least one mode must run)",
        "nbatches": "batches in each trial of the mode (and in each warm-up); with `ntrials: auto`, the longest "
        "(windows start at 8 and grow)",
        "ntrials": "counted trials of the mode; `auto`: trials until the verdict is decided, in short windows first",
        "nwarmup": "warm-up trials before the counted ones (not counted); `auto`: until the step time is steady",
    },
    "global": {
        "report_freq": "an `Iteration` line every this many steps; 0 turns them off",
        "exit_after_tests": "end the process after the last trial (status 0, or 3 if a mode has no counted trial)",
        "profiler_mode": "which ranks open the capture window: `single` (rank 0), `all`, `none`",
        "output_filename": "the result JSON's file name (no directory part); the per-step files go in `<name>.steps/` next to it",
        "output_dir": "the directory of the result JSON; null: the current directory",
        "use_distributed_barrier": "a barrier across ranks at trial boundaries",
        "console": "how to draw on a terminal: `auto` (rich on a terminal, plain lines in a log), `rich`, `plain`",
        "profiler": "the capture: `cudaProfilerApi` (Nsight Systems' capture range) or `torch` (torch.profiler on "
        "one extra, uncounted warm-up)",
        "profiler_capture": "the trial kinds captured; `auto`: IO, SYNTHETIC and FULL with cudaProfilerApi, FULL with torch",
        "profiler_steps": "with `profiler: torch`, the steps recorded in the profiled warm-up",
        "nvtx": "NVTX ranges around trials, steps and fetches when a tool (Nsight Systems) is attached",
        "sync_every_step": "synchronize the device after every step (changes what is measured; for diagnosis)",
        "dist_timeout": "seconds a rank waits for the others at a trial's end before it names the missing ranks",
        "dist_rank_lists": "each rank's figures are kept in the JSON up to this many ranks; past it, reduced "
        "summaries (slowest, fastest and mean rank per trial)",
        "auto_precision": "with `ntrials: auto`, stop when the interval's half-width is this share of the mean",
        "auto_figure_precision": "with `ntrials: auto`, a decided verdict stops measuring once each mode's interval's "
        "half-width is within this share of its mean (or at `auto_max_trials`)",
        "auto_max_trials": "with `ntrials: auto`, at most this many trials per mode",
        "auto_max_warmup": "with `nwarmup: auto`, at most this many warm-up trials per mode",
        "loop_steps": "the steps the training loop takes in all, so that the windows fit inside it; `auto`: a "
        "Hugging Face Trainer's `max_steps` or a Lightning Trainer's `estimated_stepping_batches` where one runs "
        "the loop, else unknown",
        "save_steps": "each trial's per-step times in `<output name>.steps/<trial>.npy`, written once; `all`: every "
        "rank's (rank r in `rank<r>/`)",
        "system_metrics": "sample CPU, memory, storage reads (and the GPU with nvidia-ml-py) during each trial",
        "system_metrics_hz": "readings per second of that sampler",
        "busy_machine_share": "flag a trial when other processes took more than this share of the cores",
        "io_h2d": "with an accelerator in use, IO trials that also copy each batch to it (IO_H2D)",
        "stages": "a DataLoader's stage trials: each stage and each worker timed (diagnostic, not counted)",
        "run_name": "the run's name in the JSON, `compare` and `report`; null: the script's name and start time",
        "sweep_apply": "after a loader sweep, continue with its recommended setting",
        "flops": "count the FLOPs of one untimed extra SYNTHETIC step (the COMPUTE line, MFU)",
        "peak_flops": "the device's peak FLOP/s for MFU: one figure, or one per dtype; null: the built-in table",
        "whatif": "predict what a change would give (workers, cores, a faster step, a stage made free) and check "
        "it with emulated-step trials at the end (the WHATIF line)",
        "count": "`tokens`: also tokens per second and the padding share (sequence batches)",
        "token_key": "with `count: tokens`, where the token ids are in a batch",
        "mask_key": "with `count: tokens`, where the attention mask is in a batch",
    },
    "sweep": {
        "num_workers": "worker counts to try in the loader sweep (empty: the loader's own)",
        "pin_memory": "pin_memory settings to try (empty: the loader's own)",
        "prefetch_factor": "prefetch factors to try with workers (empty: the loader's own, else 2)",
    },
}
