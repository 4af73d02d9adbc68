"""What each key of the result JSON holds, one entry per top-level key, in words (pure).

The types each key may hold, at every depth, are declared in :mod:`benchy.results.document`.

The documentation's JSON reference is generated from :data:`JSON_KEYS`; ``tests/results/test_keys.py``
checks that it names every key a written document has, and nothing else, so the two cannot drift apart.
"""

from __future__ import annotations

from typing import Tuple

__all__ = ["JSON_KEYS", "documented_keys"]

# (keys, content): the keys the entry is about (in the order written) and what they hold.
JSON_KEYS: Tuple[Tuple[Tuple[str, ...], str], ...] = (
    (("schema_version",), "4 (see Comparing and reporting runs for the versions and how older files are read)"),
    (
        ("run_name",),
        "the run's name: `global.run_name`, `$BENCHY_RUN_NAME` or `--benchy_name`, else the script's name and "
        "start time (`train_cnn 2026-11-23T01:34:36Z`)",
    ),
    (
        ("source",),
        "`run` (written by a run), or `log` (made by `benchy parse` from a log: then `parsed_from` names the log,"
        " and what a log lacks is empty or null)",
    ),
    (("parsed_from",), "only in a file made by `benchy parse`: the log it was read from"),
    (("complete",), "true when the schedule ran to its end and every trial it ran counted"),
    (
        ("exit_status",),
        "the status benchy advises for CI (see Exit status): 0 once the schedule ended with every mode counted, "
        "3 when a mode has none (the status benchy ends the process with under `exit_after_tests`), 4 in a "
        "checkpoint and wherever the benchmark did not finish (the script ended first, a signal, an error); "
        "`benchy run` and `benchy check` report it, the script's own process keeps its status; null in files "
        "of older versions that did not say",
    ),
    (("loader", "other_loaders"), "the benchmarked wrapper (`BenchmarkDataLoader created at train.py:30`) and the plain ones"),
    (("counting",), "how samples are counted in a batch (see Counting samples)"),
    (
        ("lookahead",),
        "true when the loop fetches one batch ahead (seen in a SYNTHETIC window that began an epoch: its first "
        "period held no step), false when not, null when no such window ran",
    ),
    (("nranks",), "number of ranks"),
    (("summary",), "the run's summary lines as printed (final JSON; null in checkpoints); `benchy summary FILE` reprints them"),
    (
        ("IO_H2D",),
        "`device`, `skipped` (why none ran, or null), `trial_throughput`, `trial_time`, `trial_samples`, `mean`, "
        "`interval`, `n`, `vs_io` (mean / IO's mean), `system` (rank 0's own trials)",
    ),
    (
        ("loader_startup",),
        "`seconds` (each pass's iter() to its first batch), `started` (each pass's iter(), Unix seconds), "
        "`typical`, `basis`, `batch_seconds` (IO's median period), `extra`, `epoch_batches` (`len(loader)`), "
        "`epoch_seconds` (at the FULL rate: `len(loader)` times the mean FULL period), `share`, `workers`, "
        "`persistent_workers`; null before any pass",
    ),
    (
        ("steps_needed", "epoch_length", "epochs_needed", "epochs_started", "steps_taken"),
        "the most steps of the loop the schedule's windows take (an estimate made before they run), the "
        "loader's own batches per epoch (null without a length), the epochs of the loop's own length those "
        "steps take (the loader's, or the steps the loop took of each where it leaves every epoch early; null "
        "where that length is unknown, or too short for a window to measure anything in it), and how many "
        "epochs the loop started since the benchmark began (a peek, an epoch that ended after at most one "
        "batch, is not one: see `peeks`), and the loop's steps since the benchmark began",
    ),
    (
        ("schedule",),
        "`adaptive` (some count is `auto`), `precision`, `windows_needed`, `windows_fewest` (SYNTHETIC and FULL "
        "windows at the most and the fewest), `order` (the trials in the order they ran), `warmups` (warm-up "
        "trials run per mode), `decision_confidence`, `stop` (why measuring ended: `decided`, `precise`, `budget`, "
        "`all-ran`, `horizon`, `nothing`) and `stop_reason` (the same in words), `extras` (what runs after the verdict, "
        "most useful first), `extras_not_run` (each one not run, and why), `loop_steps` (the loop's steps in all, "
        "where known: the windows fit inside them), `measuring_steps` (the loop's steps from the benchmark's start until "
        "measuring stopped: the steps the verdict took)",
    ),
    (
        ("steps_dir",),
        "the directory of per-step files, relative to the JSON (`benchy_result.steps`), or null (`save_steps: "
        "false`, or it could not be written: a warning said why)",
    ),
    (
        ("sweep",),
        "null without a sweep; else `own` (the loader's settings), `settings` (per setting: `settings` "
        "{`num_workers`, `pin_memory`, `prefetch_factor`}, `trial_throughput`, `trial_time`, `trial_samples`, "
        "`warmup`, `mean`, `interval`, `n`, `error`), `best`, `smallest_within_5pct`, `feeds_synthetic` (the "
        "cheapest setting with IO >= 1.1x SYNTHETIC, or null), `applied` (with `sweep_apply`), "
        "`memory_cap_bytes`; per setting also `workers_memory_bytes` and `over_memory_cap`",
    ),
    (
        ("stages",),
        'null when IO did not run; `{"skipped": why}`; else `period_seconds`, `throughput`, `batches`, `workers`,'
        " `trials`, `stages` (each `name`, `where`: workers, main or pin thread, `seconds_per_batch`, `share`, "
        "`note`, `off_cpu_share` for the dataset), `unexplained_share`, `workers_busy_share`, `largest`, "
        "`advice`, `transforms` (how they were found, or why not), `per_worker` (`worker`, `batches`, "
        "`busy_seconds`, `idle_seconds`, `busy_share`, `seconds_per_batch`), `slow_worker` (`worker`, `ratio`, or"
        " null), `out_of_order_batches`, `head_of_line_share`, `in_order_available`, `first_throughput` (the "
        "stage warm-up's), `worker_memory` (`worker`, `uss_bytes`, `pss_bytes`, `rss_bytes`), "
        "`instrumentation_seconds_per_sample`, `instrumentation_share` (the timers' cost as a share of the "
        "period, part of the unexplained share)",
    ),
    (
        ("first_pass",),
        "`first_trial` (IO_WARMUP_1; IO_1 when IO has no warm-up, against the later IO trials), "
        "`first_throughput`, `steady_throughput` (IO's mean), `ratio`, `files_read_bytes` (what the loader read "
        "through read(): its workers', or the process's without workers), `storage_read_bytes`, `warm_cache`; "
        "null without both",
    ),
    (
        ("compute",),
        "null with `flops: false`; `flops_per_step`, `flops_per_sample`, `samples` (the counted batch's), "
        "`counted_in` (the trial whose extra step was counted), `device`, `device_type`, `by_dtype` (FLOPs per "
        "dtype: `float32`, `tf32` for float32 matmuls and convolutions that torch lets use TF32, `bfloat16` ...),"
        " `by_op` (FLOPs per aten op), `unknown_ops` (compute-heavy ops the counter has no formula for), `tf32`, "
        "`world`, `peak_flops` (a device's, for the step's dtype mix; null without one), `peak_basis` (each "
        "figure and its source), `no_mfu` (why not), `skipped` (why no count was made); per mode `SYNTHETIC`, "
        "`FULL`: `flops_per_s` (all ranks), `interval`, `mfu`, `mfu_interval`",
    ),
    (
        ("tokens",),
        "null unless `count: tokens`; `source` (what was counted), per mode `tokens_per_s` (non-padding tokens, "
        "all ranks), `interval`, `n`, `padding` (share of the positions), `mask_every` (the mask summed on 1 in "
        "this many batches); each mode's block also gets `tokens`: per counted trial `samples`, `tokens`, "
        "`sampled_tokens`, `real_tokens`, `batches`, `sampled_batches`, `every`, `masked`",
    ),
    (
        ("energy",),
        "null without system metrics; `sources`, `missing` (why none), per mode `joules_per_trial` "
        "(`gpu_energy_j`, `cpu_energy_j`: means) and `joules_per_sample` (rank 0's own devices and samples); per "
        "trial `system.gpu_energy_j`, `gpu_energy_source`, `cpu_energy_j`, `cpu_energy_source`, or "
        "`energy_missing`",
    ),
    (
        ("whatif",),
        "null with `whatif: false`; the what-if model (see What a change would give): `basis` (what the loader's "
        "costs come from, in words), `inputs` (its figures: `samples_per_batch`, `workers`, `cores`, "
        "`other_cores_busy`, `io` and `step_seconds` as [low, mean, high], `step_cores`, the loader's costs a batch "
        "`worker_seconds_per_batch`, `worker_cpu_share`, `main_seconds_per_batch`, "
        "`main_seconds_per_batch_no_workers`, `main_cpu_share`, `slow_worker_ratio`, `worker_handover_seconds`, "
        "FULL's `full` and `full_step_seconds`, `step_fixed_share` (PARTS_1), `contention`, "
        "`contention_loader_rate`, `full_contention`, `full_loader_rate`), `scale`, `own` (the run as it is), "
        "`flip_speedup` (the step's speed-up from which loading limits FULL), `needs` (per speed-up: `workers`, "
        "`cores`, `full`), `predictions` (each change, `workers`, `cores`, `speedup`, `free_stage`, with `io`, "
        "`full`, `limit` in words and `naive_full`), `checks` (`what` was measured, `kind`, `change`, `predicted`, "
        "`measured`, `measured_half_width`, `error`, `agree`), `accelerator_utilization`, `contention`, "
        "`price_per_hour`, `wait_cost_per_epoch`, `wait_cost_per_1000_steps`",
    ),
    (
        ("EMULATED",),
        "the what-if model's check: the real loader with the step replaced by a wait `speedup` times shorter "
        "than SYNTHETIC's (not counted): `speedup`, `skipped` (why it stopped or did not run), "
        "`trial_throughput`, `trial_time`, `trial_samples`, `mean`, `interval`, `n`; null where it did not run",
    ),
    (
        ("diagnostics",),
        "the windows after the verdict, never counted: `trials` (`label`, `throughput`, `seconds`), `parts` "
        "(PARTS_1: `period_seconds`, `forward_seconds`, `backward_seconds`, `optimizer_seconds`, `rest_seconds`, "
        "`forwards`, `backwards`, `optimizer_steps`, `steps`), `contention` (CONTENTION_1: the step beside the "
        "loader running flat out, `period_seconds`, `steps`, `loader_batches`, `loader_seconds`, "
        "`loader_batches_per_second`, `ended`, `synthetic_period_seconds`, `slowdown`), `skipped` (why one did "
        "not run, in words); null where none ran",
    ),
    (
        ("interrupted",),
        "every scheduled trial that did not count: `trial`, `batches_done` (the periods it had measured), `nbatches`, `reason`",
    ),
    (("disturbed",), "the counted trials that ran on a busy machine (see `system.disturbed`)"),
    (("rerun",), "always empty: no trial runs again (a window goes on in the next epoch); kept for readers of older files"),
    (
        ("peeks",),
        "the loop's epochs that ended after at most one batch (`next(iter(loader))`: a window in progress "
        "went on in the next one)",
    ),
    (("side_iterators",), "`iter()` calls served by the plain loader while the loop's epoch ran (a peek inside the loop)"),
    (
        ("failed_ranks",),
        "ranks whose training ended with an uncaught exception while the schedule ran, as each said before it "
        "ended: `rank`, `reason` (empty when none did)",
    ),
    (("verdict",), "the verdict text, or null"),
    (
        ("decision",),
        "how the verdict was reached: `io_vs_synthetic` and `full_vs_slower` (each `method`, `ratio`, `value`, "
        "`interval`, `confidence`, `t`, `df`, `p`, `inputs`), `outcome`, `inconsistent`",
    ),
    (("config",), "the effective configuration, in the file's layout"),
    (
        ("profiler",),
        "`nvtx_tool_attached`, `profiler` (`cudaProfilerApi` or `torch`), `profiler_mode`, `capture` (the kinds, "
        "`auto` resolved), `events` (the cudaProfilerStart/Stop calls made, or why none; with `profiler: torch` "
        "each trace written), `torch_trace_dir` (`benchy_result.profile`), `torch_traces` (rank 0's files), "
        "`torch_trace_write_s` (seconds each took to write)",
    ),
    (
        ("timeline",),
        "`clock` (what its times are), `trials`: every trial that ran, in the order it started: `trial`, `mode`, "
        "`group` (`schedule`, `IO_H2D`, `sweep` with its `setting`, `stages`), `warmup`, `profiled`, `started` "
        "(Unix seconds), `own_seconds` (rank 0's time over its periods), `seconds` (the slowest rank's), "
        "`nbatches`, `samples`, `steps_file` (its per-step file was saved), `rank_started`, `rank_seconds` (each "
        "rank's; null for one process), `window` (SYNTHETIC and FULL: where the trial ran in the loop, "
        "`start_epoch`, `start_step`, `end_epoch`, `end_step` (epochs from 1 since the benchmark began, peeks not "
        "counted; steps of "
        "the epoch from 0), `segments` (the epochs' stretches it ran in), `left_out` (periods not measured: an "
        "epoch's first and those that ended in the next epoch); null for IO and side trials)",
    ),
    (("environment",), "benchy, torch and Python versions, platform, host, CPU count, device, world size, argv, time"),
    (
        ("IO", "SYNTHETIC", "FULL"),
        "per mode (throughputs of all ranks together; `rates` are rank 0's own steps), one entry per counted "
        "trial: `rates` (per-step throughputs; null in checkpoints, see above), `avg_iter_throughput`, "
        "`trial_throughput`, `trial_time` (the original's keys), and ours: `trial_samples`, `nbatches`, `mean`, "
        "`interval` (half-width or null), `confidence`, `n`, `warmup` (the warm-ups' throughputs, times, "
        "samples); with several ranks `ranks` (see Distributed runs); `steps` (final JSON; null in checkpoints, "
        "like `rates`): `p50_s`, `p90_s`, `p99_s`, `steps`, `stall_factor` (3), `stalls`, `stall_share`, "
        "`stall_period` (null when not periodic); `SYNTHETIC.batch_samples`: the size of the one cached batch; "
        "`FULL.data_wait`: `mean`, `interval`, `confidence`, `trials` (fractions of each counted trial's time "
        "spent waiting for the loader), `labels`, `wait_median_s`, `step_median_s` (null when no trial could "
        "split its time: a loop fetching one batch ahead); `system` (and `warmup.system`): one entry per trial, "
        "null when not sampled, else `seconds`, `readings`, `cpu_cores_busy` (CPU seconds of the process and its "
        "children, i.e. loader workers, per second of the trial), `cpu_cores` (cores this process may use), "
        "`cpu_util`, `processes`, `rss_max_bytes` (peak of the sum over the processes: pages shared with workers "
        "count in each), `read_bytes_per_s` (storage reads, page-cache hits excluded), `loader_read_chars_per_s` "
        "(bytes the loader read through read(), page cache included: its workers', or the process's own without "
        "workers), `other_cores_busy` (CPU seconds per second that the rest of the machine, hypervisor steal "
        "included, took on the cores this process may use; null when the trial is too short for the kernel's 10 "
        "ms CPU counters to tell it within a tenth of the cores), `disturbed` (other processes certainly took "
        "more than `busy_machine_share` of them), and with `nvidia-ml-py` and CUDA in use `gpu_util`, "
        "`gpu_memory_bytes`, `gpu_power_w` (means); all rank 0's own",
    ),
)


def documented_keys() -> Tuple[str, ...]:
    """Every top-level key :data:`JSON_KEYS` describes."""
    return tuple(key for keys, _ in JSON_KEYS for key in keys)
