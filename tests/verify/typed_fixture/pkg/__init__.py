"""A package with one finding of each kind scripts/check-harness looks for (bad.py); the ctest
verify.harness_typed_finds runs the checker over it and expects each."""
