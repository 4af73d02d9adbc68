"""The FLOPs of one real training step, counted by torch's own ``FlopCounterMode`` on untimed steps on the cached
batch, after the verdict (needs torch).

Added to torch's counter: the dtype each FLOP ran in (the op's first tensor input; float32 matmuls and
convolutions on CUDA count as ``tf32`` where torch lets them use it), so that the peak is chosen per dtype, and
the compute-heavy ops it has no formula for, so that a step the counter cannot see is said, not guessed.
"""

from __future__ import annotations

import contextlib
import functools
import platform
import re
import warnings
from typing import Any, Dict, List, Optional, Set, Tuple

import torch
from torch.utils import flop_counter
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

from ..core.outcomes import Reason, Why, raised
from ..core.results import FlopCount

# Ops without a FLOP formula that are worth naming: matmuls, convolutions, attention, recurrences, FFTs.
_HEAVY = re.compile(r"mm|matmul|conv|attention|attn|linear|einsum|rnn|lstm|gru|fft|cudnn|mkldnn|flash|bmm", re.IGNORECASE)
_CONV = re.compile(r"conv", re.IGNORECASE)
# torch.compile warns of the counter's global module hooks; the count does not change what it runs.
_HOOKS_WARNING = r"Using `torch.compile\(module\)` when there are global hooks"


def cpu_name() -> str:
    """``cpu (Intel(R) Xeon(R) ...)``: the CPU's model, as the OS names it."""
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    model = model or platform.processor() or platform.machine()
    return f"cpu ({model})" if model else "cpu"


def _extra_formulas() -> Dict[Any, Any]:
    """torch's own attention formulas for the CPU's fused attention ops, which its registry leaves out (their
    arguments start like the CUDA kernels')."""
    aten = torch.ops.aten
    registry = flop_counter.flop_registry
    out: Dict[Any, Any] = {}
    for name, like in (
        ("_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention"),
        ("_scaled_dot_product_flash_attention_for_cpu_backward", "_scaled_dot_product_efficient_attention_backward"),
    ):
        op, model = getattr(aten, name, None), registry.get(getattr(aten, like, None))
        if op is not None and model is not None and op not in registry:
            # The registered formula takes tensors already: marked raw, the counter does not wrap it again.
            out[op] = functools.partial(model)
            out[op]._get_raw = True
    return out


class _Counter(FlopCounterMode):
    """torch's counter, also keeping each op's FLOPs by dtype and device, and the unknown heavy ops."""

    def __init__(self) -> None:
        super().__init__(display=False, custom_mapping=_extra_formulas())
        self.by_dtype: Dict[str, int] = {}
        self.devices: Dict[str, int] = {}
        self.unknown: Set[str] = set()

    def _count_flops(self, func_packet: Any, out: Any, args: Any, kwargs: Any) -> Any:
        if func_packet not in self.flop_registry:
            name = str(func_packet)
            if _HEAVY.search(name.split(".")[-1]):
                self.unknown.add(name)
            return super()._count_flops(func_packet, out, args, kwargs)
        counts = self.flop_counts["Global"]
        before = counts.get(func_packet, 0)
        try:
            result = super()._count_flops(func_packet, out, args, kwargs)
        except Exception:  # a formula that fails on these arguments must never break the user's step
            self.unknown.add(f"{func_packet} (its formula failed)")
            return out
        added = counts.get(func_packet, 0) - before
        if added:
            tensor = next((a for a in tree_leaves(args) if isinstance(a, torch.Tensor)), None)
            dtype = "unknown" if tensor is None else str(tensor.dtype).replace("torch.", "")
            device = "cpu" if tensor is None else tensor.device.type
            if dtype == "float32" and device == "cuda":
                conv = bool(_CONV.search(str(func_packet)))
                if (conv and torch.backends.cudnn.allow_tf32) or (not conv and torch.backends.cuda.matmul.allow_tf32):
                    dtype = "tf32"
            self.by_dtype[dtype] = self.by_dtype.get(dtype, 0) + added
            key = device if tensor is None or tensor.device.index is None else f"{device}:{tensor.device.index}"
            self.devices[key] = self.devices.get(key, 0) + added
        return result


class StepCounter:
    """Counts the FLOPs of a step over a stretch of the loop's asks (:meth:`enter`, :meth:`mark` at each ask,
    :meth:`leave`); then :attr:`count` holds the :class:`FlopCount`, or why none was made.

    The FLOPs between asks repeat with the loop's own period (gradient accumulation takes several batches a step):
    the step's FLOPs are those of the shortest block of ``b`` intervals that repeats, over ``b``."""

    MAX_INTERVALS = 12  # covers periods of 1 to 6 asks

    def __init__(self, samples: int, label: str) -> None:
        self.samples = samples
        self.label = label
        self.completed = False  # the count stands
        self.count: Optional[FlopCount] = None
        self.settled = False
        self._mode: Optional[_Counter] = None
        self._exits = contextlib.ExitStack()  # the counter and the warnings filter, left together
        # At each ask: the running totals (all FLOPs, per op, per dtype, per device).
        self._marks: List[Tuple[int, Dict[str, int], Dict[str, int], Dict[str, int]]] = []
        self._period = 0

    def enter(self) -> None:
        try:
            self._exits.enter_context(warnings.catch_warnings())
            warnings.filterwarnings("ignore", message=_HOOKS_WARNING)
            self._mode = self._exits.enter_context(_Counter())
            self._marks = [(0, {}, {}, {})]
        except Exception as err:  # a torch without the counter's internals
            self._exits.close()
            self.completed = self.settled = True  # a final answer: no later trial would fare better
            self.count = FlopCount(
                samples=self.samples,
                label=self.label,
                skipped=Reason(Why.FLOPS_FAILED, error=raised(err)),
            )

    @property
    def intervals(self) -> int:
        return max(0, len(self._marks) - 1)

    def mark(self) -> None:
        """The loop asked for its next batch: the FLOPs since the last ask are one interval."""
        mode = self._mode
        if mode is None or self.settled:
            return
        ops = {str(k): int(v) for k, v in mode.flop_counts["Global"].items()}
        self._marks.append((int(mode.get_total_flops()), ops, dict(mode.by_dtype), dict(mode.devices)))
        totals = [m[0] for m in self._marks]
        deltas = [b - a for a, b in zip(totals, totals[1:])]
        if len(deltas) >= 4 and not any(deltas):  # the counter sees nothing the steps run (a compiled graph): said
            self._period, self.settled = len(deltas), True
            return
        for period in range(1, len(deltas) // 2 + 1):
            last, before = deltas[-period:], deltas[-2 * period : -period]
            if sum(last) > 0 and all(abs(a - b) <= 0.01 * max(a, b) for a, b in zip(last, before)):
                self._period, self.settled = period, True
                return
        if len(deltas) >= self.MAX_INTERVALS:
            self._period, self.settled = len(deltas), True  # no period shows: the mean over every interval

    def leave(self, *, completed: bool = True) -> None:
        """Leave the counter; ``completed``: the count stands (else :attr:`count` stays None)."""
        if completed and not self.settled:
            self.mark()  # the ask that ends the count ends its last interval
        mode, self._mode = self._mode, None
        if mode is None:
            return
        self._exits.close()
        if not completed or self.intervals == 0:
            return
        self.completed = True
        period = self._period or self.intervals
        end, start = self._marks[-1], self._marks[-1 - period]

        def per_step(after: Dict[str, int], before: Dict[str, int]) -> Dict[str, int]:
            out = {k: (v - before.get(k, 0)) // period for k, v in after.items()}
            return {k: v for k, v in out.items() if v}

        devices = per_step(end[3], start[3])
        device_type, device = "cpu", cpu_name()
        if devices:
            where = max(devices, key=lambda k: devices[k])
            device_type = where.split(":")[0]
            if device_type != "cpu":
                device = _accelerator_name(where)
        self.count = FlopCount(
            total=(end[0] - start[0]) // period,
            samples=self.samples,
            device=device,
            device_type=device_type,
            by_dtype=per_step(end[2], start[2]),
            by_op=per_step(end[1], start[1]),
            unknown=tuple(sorted(mode.unknown)),
            tf32=bool(device_type == "cuda" and torch.backends.cuda.matmul.allow_tf32),
            label=self.label,
        )


def _accelerator_name(where: str) -> str:
    try:
        if where.startswith("cuda"):
            return str(torch.cuda.get_device_name(torch.device(where)))
    except Exception:
        pass
    return where
