#!/usr/bin/env python3
"""The script the verifier pool starts: the kforge_harness package beside it does the work.

  python3 -s -u kforge-harness.py worker --control-fd N [--preload m1,m2] [--probe-gpu]
  python3 -s -u kforge-harness.py fresh --request FILE --result-fd N
  python3 -s kforge-harness.py assemble --request FILE
  python3 -s kforge-harness.py info [--cuda]
"""

import os
import sys

if __name__ == "__main__":
    here = os.path.dirname(os.path.realpath(__file__))
    if sys.path[0] != here:
        sys.path.insert(0, here)
    from kforge_harness.cli import main

    sys.exit(main(sys.argv[1:]))
