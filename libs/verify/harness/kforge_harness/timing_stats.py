"""The statistics of the speed label, pure Python (no torch): medians, seeded bootstrap
intervals of a median and of a ratio of medians, the stop rule of a timing loop, the peak
bandwidth of known GPUs and the label's flags. tests/verify/timing/stats_test.py checks every
function here without a GPU; timing.py calls them on the times it took."""

from __future__ import annotations

import math
import random
from typing import Any, Optional, Sequence

from .report_schema import SPEED_FLAG

# Peak memory bandwidth in GB/s (10^9 bytes a second) of known GPUs, matched against the name
# the driver gives (torch.cuda.get_device_name), the most specific entry first. A GPU not listed
# gets no fraction of peak (and no perf_suspect from bandwidth).
PEAK_GBPS = (
    ("H100 PCIe", 2000.0),
    ("H100 NVL", 3900.0),
    ("H100", 3350.0),  # SXM5 80 GB
    ("H200", 4800.0),
    ("H800", 3350.0),
    ("GH200", 4000.0),
    ("B200", 8000.0),
    ("A100-SXM4-80GB", 2039.0),
    ("A100 80GB PCIe", 1935.0),
    ("A100", 1555.0),  # 40 GB
    ("L40S", 864.0),
    ("L4", 300.0),
    ("A10G", 600.0),
    ("RTX 4090", 1008.0),
    ("MI300X", 5300.0),
    ("MI250X", 3277.0),
)

SPEEDUP_SUSPECT = 10.0  # more than this many times the reference: perf_suspect
PEAK_SUSPECT = 1.0  # achieved bytes/s above this fraction of peak: perf_suspect


def median(xs: Sequence[float]) -> float:
    """The median of a non-empty sequence of numbers (the mean of the middle two for an even
    count). Raises ValueError on an empty one."""
    s = sorted(xs)
    n = len(s)
    if n == 0:
        raise ValueError("median of no values")
    mid = n // 2
    return float(s[mid]) if n % 2 else (s[mid - 1] + s[mid]) / 2.0


def _percentile(sorted_xs, q):
    """Linear interpolation between closest ranks, q in [0, 1]."""
    if not sorted_xs:
        raise ValueError("percentile of no values")
    pos = q * (len(sorted_xs) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def bootstrap_median_ci(xs: Sequence[float], seed: int = 0, n_boot: int = 500,
                        level: float = 0.95) -> tuple[float, float]:
    """(low, high): the percentile bootstrap interval of the median of xs (resampled with a
    random.Random(seed), so the same times always give the same interval)."""
    if len(xs) == 0:
        raise ValueError("interval of no values")
    rng = random.Random(seed)
    n = len(xs)
    meds = sorted(median([xs[rng.randrange(n)] for _ in range(n)]) for _ in range(n_boot))
    a = (1.0 - level) / 2.0
    return _percentile(meds, a), _percentile(meds, 1.0 - a)


def speedup(ref: Sequence[float], cand: Sequence[float]) -> float:
    """median(ref) / median(cand): above 1 the candidate is faster."""
    c = median(cand)
    return math.inf if c <= 0 else median(ref) / c


def bootstrap_ratio_ci(ref: Sequence[float], cand: Sequence[float], seed: int = 0,
                       n_boot: int = 500, level: float = 0.95) -> tuple[float, float]:
    """(low, high): the bootstrap interval of speedup(ref, cand). The two were taken
    interleaved, rep i of one beside rep i of the other, so pairs are resampled together (a
    clock that drifts moves both)."""
    n = min(len(ref), len(cand))
    if n == 0:
        raise ValueError("interval of no values")
    rng = random.Random(seed)
    ratios = []
    for _ in range(n_boot):
        idx = [rng.randrange(n) for _ in range(n)]
        ratios.append(speedup([ref[i] for i in idx], [cand[i] for i in idx]))
    ratios.sort()
    a = (1.0 - level) / 2.0
    return _percentile(ratios, a), _percentile(ratios, 1.0 - a)


def median_ci_order(xs: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """(low, high): the distribution-free interval of the median from two order statistics
    (the binomial's normal approximation: for 10 values the 2nd and 9th, for 100 the 41st and
    60th). One sort, no resampling: cheap enough for a stop rule checked every other rep inside
    the exclusive section (a 200-resample bootstrap of 100 values costs about 5 ms of Python)."""
    s = sorted(xs)
    n = len(s)
    if n == 0:
        raise ValueError("interval of no values")
    z = _Z95 if level == 0.95 else _z_of(level)
    h = z * math.sqrt(n) / 2.0
    lo = max(0, int(math.floor(n / 2.0 - h)))
    hi = min(n - 1, max(lo, int(math.ceil(n / 2.0 + h)) - 1))
    return float(s[lo]), float(s[hi])


_Z95 = 1.959963984540054


def _z_of(level):
    # Bisection on the normal CDF (math.erf): only for levels other than 0.95.
    lo, hi = 0.0, 10.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if math.erf(mid / math.sqrt(2.0)) < level:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def stop_half_width(series: Sequence[Sequence[float]]) -> float:
    """The relative half width the stop rule reads, from the order-statistic interval: of the
    median of one series (a kernel's times), or of the median of the per-rep ratios
    series[0][i] / series[1][i] (a reference and a candidate timed as pairs). inf when a time is
    not positive."""
    if len(series) == 1:
        xs = series[0]
    else:
        n = min(len(series[0]), len(series[1]))
        if any(series[1][i] <= 0 for i in range(n)):
            return math.inf
        xs = [series[0][i] / series[1][i] for i in range(n)]
    if not xs:
        return math.inf
    return relative_half_width(median(xs), median_ci_order(xs))


def relative_half_width(estimate: float, interval: Sequence[float]) -> float:
    """Half the interval's width over the estimate (inf for a zero estimate)."""
    lo, hi = interval
    return math.inf if estimate == 0 else (hi - lo) / 2.0 / abs(estimate)


def stop_reason(reps: int, elapsed_s: float, rel_half_width: float, min_reps: int, max_reps: int,
                budget_s: float, target: float) -> Optional[str]:
    """Why a timing loop stops now, or None to go on: "tight" (at least min_reps and the
    interval's half width within target of the estimate), "budget" (elapsed_s reached budget_s
    with at least 3 reps), "max_reps"."""
    if reps >= min_reps and rel_half_width <= target:
        return "tight"
    if reps >= max_reps:
        return "max_reps"
    if elapsed_s >= budget_s and reps >= 3:
        return "budget"
    return None


def peak_gbps(device_name: Optional[str]) -> Optional[float]:
    """The peak bandwidth (GB/s) of the GPU the driver names, or None when it is not known."""
    if not device_name:
        return None
    name = str(device_name)
    for key, gbps in PEAK_GBPS:
        if key.lower() in name.lower():
            return gbps
    return None


def bandwidth(nbytes: int, seconds: float,
              peak: Optional[float]) -> tuple[Optional[float], Optional[float]]:
    """(achieved GB/s, its fraction of peak or None) of nbytes moved in seconds."""
    if not nbytes or seconds is None or seconds <= 0:
        return None, None
    gbps = nbytes / seconds / 1e9
    return gbps, (gbps / peak if peak else None)


# Profiler rows that move data or write a constant: a copy between host and device, a memset, a
# fill. None of them computes a result from the inputs, so they stay out of the denominator of
# the kernels' share (an honest wrapper that takes host lists or allocates zeros pays them; they
# are still listed in ran_instead). A copy within the device stays in: it can do a library's work
# (a gather, a transpose's contiguous()).
NOT_WORK_PREFIXES = ("Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoH", "Memset")
NOT_WORK_PARTS = ("FillFunctor",)


def counts_as_work(name: str) -> bool:
    """Whether a kernel the profiler saw during a call counts as work in the kernels' share."""
    return not (name.startswith(NOT_WORK_PREFIXES) or any(p in name for p in NOT_WORK_PARTS))


def gpu_share(own_us: float, other_us: float) -> Optional[float]:
    """The sample's kernels' share of a call's kernel time on the GPU (the profiler's device
    times), None when the call ran no kernel at all."""
    total = own_us + other_us
    return None if total <= 0 else min(1.0, own_us / total)


def settle_share(cmp: dict[str, Any], gpu: Optional[float], min_kernel_share: float) -> bool:
    """A share from CUDA events spans the host's gaps between a call's launches (an allocation,
    Python), so a short honest kernel can read below the bound; where the profiler saw the
    call's kernels, their device times decide: the share becomes theirs ("kernel_share_by":
    "profiler") when the events' share was below the bound and the profiler's is not. True
    when the share changed (the label is recomputed)."""
    share = cmp.get("kernel_share")
    if gpu is None or share is None or share >= min_kernel_share or gpu < min_kernel_share:
        return False
    cmp["kernel_share"] = round(gpu, 4)
    cmp["kernel_share_by"] = "profiler"
    return True


def label(kernels: list[dict[str, Any]], cmp: Optional[dict[str, Any]], min_speedup: float,
          reproduced: bool = True, unseen: bool = False,
          calls_reference: bool = False, min_kernel_share: float = 0.5) -> dict[str, Any]:
    """The label's verdicts from its figures: kernels is a list of dicts with "fraction_of_peak"
    (or None); cmp is None (no reference) or a dict with "speedup" and "ci" [low, high], and
    where measured "launches_per_call" (the sample's launches in one wrapper call) and
    "kernel_share" (their share of the call's GPU time). Returns {"pass_perf": bool or None,
    "flags": [...]}: pass_perf is None without a reference, True when the interval's lower bound
    is above min_speedup and nothing is flagged."""
    flags = []
    if cmp is not None and (cmp.get("launches_per_call") == 0 or
                            0 in (cmp.get("share_launches") or [])):
        flags.append(SPEED_FLAG.kernel_not_timed)
    elif cmp is not None and cmp.get("kernel_share") is not None and \
            cmp["kernel_share"] < min_kernel_share:
        flags.append(SPEED_FLAG.library_work)
    fractions = [k.get("fraction_of_peak") for k in kernels]
    if cmp is not None:
        fractions.append(cmp.get("fraction_of_peak"))
    if any(f is not None and f > PEAK_SUSPECT for f in fractions) or \
            (cmp is not None and cmp.get("speedup") is not None and
             cmp["speedup"] > SPEEDUP_SUSPECT):
        flags.append(SPEED_FLAG.perf_suspect)
    if not reproduced:
        flags.append(SPEED_FLAG.not_reproduced)
    if unseen:
        flags.append(SPEED_FLAG.unseen_work)
    if calls_reference:
        flags.append(SPEED_FLAG.calls_reference)
    if cmp is None or cmp.get("ci") is None:
        return {"pass_perf": None, "flags": flags}
    ok = cmp["ci"][0] > min_speedup and not flags
    return {"pass_perf": bool(ok), "flags": flags}


UNSEEN_ABS_S = 20e-6


def rep_time(stream_s: float, device_s: float) -> float:
    """One rep's time: the stream's own end event, unless the device-wide end (less the
    synchronise's cost) shows work the stream did not wait for: over 1.5 times the stream's time
    and more than 20 microseconds beyond it (the synchronise's latency varies by less on a busy
    CPU). Then the device-wide time: work on a side stream is counted."""
    return device_s if device_s > 1.5 * stream_s + UNSEEN_ABS_S else stream_s


def unseen_work(stream_s: float, time_s: float) -> bool:
    """Whether a call's median time (rep_time's) is the device's, not its stream's: it left
    work on the device that its stream's end event did not see."""
    return time_s > 1.5 * stream_s + UNSEEN_ABS_S
