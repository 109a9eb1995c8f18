#!/bin/sh
# Re-runs the exact script the verifier ran for this sample, by hand, from this folder.
# Needs python3 with the packages the script imports (torch, triton) and, for GPU kernels, a
# GPU. The verifier's sandbox (no network, resource limits, deadline) does not apply here.
# Extra arguments go to python3 after the script.
set -eu
cd "$(dirname "$0")"
exec python3 script.py "$@"
