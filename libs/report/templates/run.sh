#!/bin/sh
# Re-runs the exact script the verifier ran for this sample, by hand, from this folder, with the
# verifier's Python (verifier.python of the configuration `kforge debug` read) and its
# verifier.python_path first on PYTHONPATH: the script's preamble imports what that Python had
# (torch, numpy where installed), so another python3 may not even import it. For GPU kernels it
# needs a GPU. The verifier's sandbox (no network, resource limits, deadline) does not apply here.
# Extra arguments go to Python after the script.
set -eu
cd "$(dirname "$0")"
python=@PYTHON@
python_path=@PYTHON_PATH@
if [ -n "$python_path" ]; then
  PYTHONPATH="$python_path${PYTHONPATH:+:$PYTHONPATH}"
  export PYTHONPATH
fi
exec "$python" script.py "$@"
