"""A package with one finding of each kind scripts/check-harness looks for (bad.py, and vocab.py:
vocabulary names spelled as values); the ctest verify.harness_typed_finds runs the checker over
it and expects each."""
