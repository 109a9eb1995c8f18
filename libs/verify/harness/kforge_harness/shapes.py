"""The shapes of what the harness's modules hand each other, named for the type hints."""

from typing import Any

# A JSON object: a request, a report or a part of one (phases return their parts).
Json = dict[str, Any]
# What runner.run_sample returns for the later phases: path, info, tests, called, state (a
# triton_hooks.TritonState) and, after the real run, module.
Sample = dict[str, Any]
