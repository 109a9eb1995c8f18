"""Out-of-bounds accesses of a passing sample's kernels, found the same way whatever lies next to
the test's buffers (docs/VERIFIER.md, "Out-of-bounds accesses").

A kernel that reads or writes past its buffers faults or not depending on what the allocator put
next to them: the same file passes in one process and dies of an illegal memory access in
another. So after a passing real run, each distinct launch the recorder captured (kernel_replay:
every argument, integer contents as captured, floats made afresh) is replayed on buffers that
sit between guard zones, four times: zones of 0x00 bytes, zones of 0xFF bytes (NaN for floats,
-1 for integers), 0x00 again, and every other storage's zones 0xFF (a copy from one buffer's
zone into another's would otherwise write the byte that zone held). The replay's storages lie
in one arena between two margins (kernel_replay.MARGIN) held like the zones of the storage next
to each, so an access past the arena's ends lands in memory the replay controls. Before each
replay the GPU memory the caching allocator holds free is filled with one byte, the same in
every replay (FREE_BYTE): what an earlier replay left there cannot make two replays differ, and
a read past the margins, into memory the allocator placed, sees the same in every replay and is
not counted: whether it lands in free memory, another tensor or nothing depends on the run, and
a flag must not (issue 52). A zone (or margin) that no longer holds its byte after a launch
was written (`writes`). Outputs that differ between the 0x00 and 0xFF replays, where the two
0x00 replays agree, come from reads of the zones or margins (`reads`); the buffer read is found
by changing one storage's zones (and the margin next to it) at a time. A masked load that
reads nothing outside its buffer sees no zone and is not flagged; a launch whose two 0x00
replays differ (atomics) is judged on writes only. A replay that faults on these fresh buffers
is out of bounds too (`fault`); the GPU context is then lost and the check stops.

Works on torch tensors and on the lists of the CPU stand-in for Triton (guard zones of elements;
a pointer past the zones raises there, as a fault).
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable

from .kernel_replay import (ALIGN, MARGIN, READS, HeldArenas, context_lost, differs_later,
                            run_launch, settle, zone_sizes)
from .listed import listed
from .shapes import Json

FAULT_WORDS = listed("fault_words.txt", __file__)  # the drivers' words; the pool reads them too

SEED = 20261128
FREE_BYTE = 0x00  # what the allocator's free GPU memory holds in every replay
BUDGET_S = 10.0  # stop replaying after this long (the launches checked so far stand); the pool
# sends its own (request["bounds_check_time_s"]); it runs inside the real run's deadline
MAX_NAMED = 8  # storages tried one at a time to name the one read out of bounds


def _names(rec, sids):
    """The parameter names of the arguments that are views of the given storages."""
    out = []
    for i, e in enumerate(rec.args):
        if e[0] in ("tensor", "list") and e[1] in sids:
            out.append(rec.names[i] if i < len(rec.names) else "#%d" % i)
    for k, e in rec.kwargs.items():
        if e[0] in ("tensor", "list") and e[1] in sids:
            out.append(k)
    return sorted(set(out), key=out.index)


# Where this process's check spends its time (check() reports it in COSTS): the fills before
# the replays (seconds, fills, bytes filled), the replays' launches (seconds: fresh buffers and
# the launch, not its wait), their guards (seconds: the outputs' copies, the zones and margins
# checked and read, which waits for the launch) and the comparisons of their outputs (seconds),
# and the device's answers read back (kernel_replay.READS). Issue 54: with the speed label on,
# each launch's replays cost about 45 ms more CPU on the H200, in every timed sample, and of
# the phase's wall only a third was its fills and launches; these, with the allocator's state
# as the check begins (_cache_state: what the phases before it left held), say where it goes.
FILLS = [0.0, 0, 0, 0.0]
JUDGED = [0.0, 0.0, 0.0]  # seconds: guards, comparisons, all of _judge
COSTS: Json = {}  # the last check's figures, as check() leaves them


def _fill_free(byte):
    """The GPU memory the caching allocator holds free filled with `byte` (FREE_BYTE in every
    replay): what an earlier replay left there cannot make two replays differ. Not waited for:
    the replay's buffers and launch come after the fill on the same stream, and the read of its
    guards waits for all of it."""
    t0 = time.monotonic()
    try:
        from .mutants import poison_gpu_cache
        FILLS[2] += poison_gpu_cache(byte, collect=False, wait=False)
    except Exception:  # noqa: BLE001 - no memory to fill with: the zones alone then
        pass
    FILLS[0] += time.monotonic() - t0
    FILLS[1] += 1


def _no_wait():
    pass


def _replay(rec, launch_raw, sync, fill, fill_for=None, keep=True):
    """One replay on fresh buffers after a fill of free memory: (the storages whose zones or
    margins it wrote, its outputs' copies; none without `keep`). The launch is waited for by
    the read of its guards (one transfer, after the outputs' copies), then by `sync` (nothing
    left to wait for by then but what a fault left): what faults raises here as before."""
    _fill_free(FREE_BYTE)
    t0 = time.monotonic()
    launch = run_launch(rec, "same", SEED, rec.jit, launch_raw, _no_wait, fill=fill,
                        fill_for=fill_for, guard_lists=True, sized=True)
    t1 = time.monotonic()
    FILLS[3] += t1 - t0
    out = launch.outputs() if keep else []
    written = launch.guards_written()
    sync()
    JUDGED[0] += time.monotonic() - t1
    return written, out


def _differ(pairs):
    """differs(a, b) of each pair of replays' outputs, read in one transfer."""
    t0 = time.monotonic()
    got = settle([differs_later(a, b) for a, b in pairs])
    JUDGED[1] += time.monotonic() - t0
    return got


def _read_from(rec, launch_raw, sync, zeros):
    """The storages whose zones change the outputs when they alone hold 0xFF."""
    sids, found = list(rec.storages)[:MAX_NAMED], []
    for sid in sids:
        _, out = _replay(rec, launch_raw, sync, 0x00, {sid: 0xFF})
        found.append(differs_later(zeros, out))  # on the device; `out` goes before the next
    t0 = time.monotonic()
    got = settle(found)
    JUDGED[1] += time.monotonic() - t0
    return [sid for sid, read in zip(sids, got) if read]


def _judge(rec, launch_raw, sync):
    """One record's replays: (storages whose zones it wrote, storages it read out of bounds,
    whether its replays on the same zones agree). They share one arena (HeldArenas: where each
    replay's would lie anyway, and not filled again as free memory before each)."""
    t0 = time.monotonic()
    try:
        with HeldArenas():
            return _judge_held(rec, launch_raw, sync)
    finally:
        JUDGED[2] += time.monotonic() - t0


def _judge_held(rec, launch_raw, sync):
    wa, zeros = _replay(rec, launch_raw, sync, 0x00)
    wb, ones = _replay(rec, launch_raw, sync, 0xFF)
    wc, again = _replay(rec, launch_raw, sync, 0x00)
    # Zones of every other storage 0xFF: a copy from one buffer's zone into another's writes
    # the byte that zone already held when all zones hold the same. Only its guards count.
    mixed = {sid: 0xFF for i, sid in enumerate(rec.storages) if i % 2}
    wd, _ = _replay(rec, launch_raw, sync, 0x00, mixed, keep=False)
    written = list(dict.fromkeys(wa + wb + wc + wd))
    read: list[Any] = []
    # The three comparisons in one read (the last is used only when the first two agree and
    # nothing was written: computed anyway, it changes no answer).
    za, az, zo = _differ([(zeros, again), (again, zeros), (zeros, ones)])
    steady = not za and not az
    if steady and not written and zo:
        # The 0xFF replays must agree too: a racy kernel (a spinning lock's reduction) whose
        # two 0x00 replays happened to agree differs from a third replay whatever its zones
        # hold, and that is no read (issue 52: spinning_lock_reduction flagged in one run).
        _, ones_again = _replay(rec, launch_raw, sync, 0xFF)
        steady = not any(_differ([(ones, ones_again), (ones_again, ones)]))
        if steady:
            read = _read_from(rec, launch_raw, sync, zeros) or ["?"]
    return written, read, steady


def _spacer(rec):
    """GPU memory as large as the record's replay arena, held while its finding is judged
    again: the arena then lies elsewhere among the allocator's memory (nothing on the CPU
    stand-in, whose arenas are placed by kernel_replay.place_lists)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    zone = zone_sizes(rec, True)[0]
    sizes: dict[str, tuple[Any, int]] = {}
    for info in rec.storages.values():
        if not info.get("list"):
            dev, n = str(info["device"]), -(-info["nbytes"] // ALIGN) * ALIGN + 2 * zone
            sizes[dev] = (info["device"], sizes.get(dev, (None, 2 * MARGIN))[1] + n)
    held = []
    try:
        for device, size in sizes.values():  # the arena's size: its block, freed, is taken
            held.append(torch.empty(size, dtype=torch.uint8, device=device))
    except Exception:  # noqa: BLE001 - no room: judged again where the allocator puts it
        pass
    return held


def _confirmed(rec, launch_raw, sync, written, read):
    """A finding judged again with the arena placed elsewhere (_spacer): what reproduces.
    Only what the zones and margins show is the same in every placement; a finding that
    came from the memory around the arena (another run's allocations) does not come back."""
    held = _spacer(rec)
    try:
        w2, r2, steady = _judge(rec, launch_raw, sync)
    finally:
        del held
    return [sid for sid in written if sid in w2], (read if r2 and steady else [])


def _release_cache():
    """The allocator's free segments given back before the check, so that what the phases
    before it left cached (the speed label's inputs, the differential's copies: present in one
    run and not in another) does not decide where the arenas lie."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - nothing to release
        pass


def _cache_state() -> Json:
    """What the allocator holds as the check begins, its free segments given back: the phases
    before it (the speed label's) may have left tensors or graphs alive. {} without CUDA."""
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_initialized():
            return {}
        stats = torch.cuda.memory_stats()
        return {"held_mib": round(stats.get("reserved_bytes.all.current", 0) / (1 << 20), 1),
                "held_segments": int(stats.get("segment.all.current", 0))}
    except Exception:  # noqa: BLE001 - a diagnostic
        return {}


def check(records: list[Any], launch_raw: Callable[..., Any], sync: Callable[[], None],
          budget_s: float = BUDGET_S) -> Json:
    """Replays each record between guard zones; returns the report's "bounds" object:
    out_of_bounds (bool), checked, writes and reads ([{kernel, launch, buffers}]), fault,
    nondeterministic (kernels judged on writes only), unconfirmed (findings that did not
    come back when judged again), errors, ms. Where the time went is left in COSTS (the bounds
    phase puts it in its phase times): fill_ms, fills, fill_mib (the fills of free memory before
    the replays), launch_ms (the replays' launches on fresh buffers), held_mib and held_segments
    (what the allocator held as the check began)."""
    t0 = time.monotonic()
    res: Json = {"out_of_bounds": False, "checked": 0, "launches": len(records), "writes": [],
           "reads": [], "fault": None, "nondeterministic": [], "unconfirmed": [], "errors": []}
    FILLS[:] = [0.0, 0, 0, 0.0]
    JUDGED[:] = [0.0, 0.0, 0.0]
    reads = READS[0]
    _release_cache()
    COSTS.clear()
    COSTS.update(_cache_state())
    for n, rec in enumerate(records, 1):
        if time.monotonic() - t0 > budget_s:
            res["stopped"] = "budget of %.0f s spent" % budget_s
            break
        try:
            written, read, steady = _judge(rec, launch_raw, sync)
            if written or read:
                found = (len(written), bool(read))
                written, read = _confirmed(rec, launch_raw, sync, written, read)
                if (len(written), bool(read)) != found:
                    res["unconfirmed"].append({"kernel": rec.kernel, "launch": n})
        except Exception as e:  # noqa: BLE001 - the launch's own error on fresh buffers
            why = "%s: %s" % (type(e).__name__, (str(e).strip().splitlines() or [""])[0][:300])
            faulted = "out-of-bounds" in str(e) or any(w in str(e) for w in FAULT_WORDS)
            if faulted or context_lost(sync):
                res["fault"] = {"kernel": rec.kernel, "launch": n, "error": why}
                break
            if len(res["errors"]) < 3:
                res["errors"].append("%s: %s" % (rec.kernel, why))
            continue
        res["checked"] += 1
        if not steady and rec.kernel not in res["nondeterministic"]:
            res["nondeterministic"].append(rec.kernel)
        if written:
            res["writes"].append({"kernel": rec.kernel, "launch": n,
                                  "buffers": _names(rec, set(written))})
        if read:
            res["reads"].append({"kernel": rec.kernel, "launch": n,
                                 "buffers": _names(rec, set(read)) or ["?"]})
    res["out_of_bounds"] = bool(res["writes"] or res["reads"] or res["fault"])
    res["ms"] = int((time.monotonic() - t0) * 1000)
    COSTS.update(fill_ms=int(FILLS[0] * 1000), fills=FILLS[1],
                 fill_mib=round(FILLS[2] / (1 << 20), 1), launch_ms=int(FILLS[3] * 1000),
                 guard_ms=int(JUDGED[0] * 1000), compare_ms=int(JUDGED[1] * 1000),
                 judge_ms=int(max(0.0, JUDGED[2] - FILLS[0] - FILLS[3]) * 1000),
                 reads=READS[0] - reads)
    return res


def describe(res: Json) -> str:
    """One line for the verdict's detail, or "" when nothing was found."""
    if not res.get("out_of_bounds"):
        return ""
    parts = []
    for kind, verb in (("writes", "writes"), ("reads", "reads")):
        for w in res[kind][:1]:
            parts.append("kernel %s %s outside %s (launch %d)" % (
                w["kernel"], verb, ", ".join(w["buffers"]) or "its buffers", w["launch"]))
    if res.get("fault"):
        f = res["fault"]
        parts.append("kernel %s faulted on fresh buffers (launch %d): %s" % (
            f["kernel"], f["launch"], f["error"]))
    return "; ".join(parts)
