-- The mutation score of each verification: of the mutants that could change the kernel's
-- outputs (the skip-launch run and the output mutants of docs/VERIFIER.md), how many the test
-- killed. NULL where no mutant ran (the real run did not pass, or verifier.mutant_check is off).
-- The full account (survivors, mutants that did not apply, coverage facts) stays in result_json.
ALTER TABLE verifications ADD COLUMN mutants_killed INTEGER;
ALTER TABLE verifications ADD COLUMN mutants_applicable INTEGER;
