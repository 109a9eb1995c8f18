"""kforge verifier harness: runs one generated sample (code + wrapper + test) and reports JSON.

The package, by concern (docs/VERIFIER.md describes what each does for a verdict):

  assembly      the script that runs: preamble, cleaned code, wrapper, test
  triton_hooks  Triton's JIT and autotuner patched: launches counted and recorded, single-config
                autotuning, compile timing
  shims         APIs removed from Triton, put back when a script uses them
  runner        one run of a sample's tests and its report
  mutants       the mutant runs: launches skipped, then the battery of output mutants
  controls      control runs of the unmutated sample at random places among the mutant runs
  blind         every call of the sample's code: one runner thread, one neutral frame, the
                verifier's modules out of sys.modules while it runs
  guard         the functions a verdict or a time rests on, checked for replacement after
                every call; the audit hook that sees the sample scan for the verifier
  bounds        a passing sample's launches replayed between guard zones: reads and writes
                outside its buffers (kernel_replay's recorder and Launch)
  crosscompile  a passing sample's launched kernels compiled for other targets (hip:gfx942),
                each target in a forked child
  timing        the speed label: each kernel's largest launch and the wrapper against its
                PyTorch reference timed (timing_timer: a rep and the loop; timing_stats: the
                statistics; gpulock: the device held exclusively while timing, a watcher
                thread stepping each other sample out between its launches)
  differential  the wrapper against its declared reference on transformed copies of inputs()
  origin        where the answer the verifier compares outside the test came from: the same
                calls with the kernels' outputs replaced after each launch (kernel_not_used)
  gpusync       the one "wait for this process's GPU work" every module calls
  cudasync      how the sample's process waits for its GPU (verifier.cuda_sync): the
                scheduling flag of each device's context, set before the context is made
  phases/       the checks as phases: one entry point per check (test_run, speed, cross_compile,
                bounds_replay, skip_launch, output_mutants, kernel_battery), called in order by
                real_run / mutant_run; sequence.Phases times each, keeps its failure to it and
                (guard) puts back what it left in the process
  shapes        the names of what the modules hand each other, for the type hints
  contain/      the sandbox: contain() calls one step per mechanism, each in its own module
  report_schema the report's declared fields (report_fields.txt), checked before it is written
  worker        the pool's two modes (a long-lived worker that forks per sample; fresh)
  cli           the command line (kforge-harness.py is the script the pool starts)

Everything here uses the standard library only; torch, triton and numpy are used when present.
Every public function has type hints; scripts/check-harness (ctest verify.harness_typed) checks
that, pyflakes, and that no underscore name is used outside its module, and (verify.harness_mypy)
runs mypy over the modules listed in its MYPY_CLEAN.
"""

from .report_schema import VERSION as HARNESS_VERSION  # noqa: E402 - the report's declared version

__all__ = ["HARNESS_VERSION", "MAX_MESSAGE", "TRACEBACK_LINES"]
MAX_MESSAGE = 4000
TRACEBACK_LINES = 40
