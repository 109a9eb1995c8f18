-- kforge schema, version 31: the verifier's two integrity flags in flag_names (their lines in
-- libs/verify/harness/kforge_harness/vocabulary/flags.txt, in the same order):
--   tampered       the sample's code replaced a function its verdict or time rests on, or scanned
--                  the process for the verifier (report "integrity", the pool's "guard" lines)
--   unstable_test  a control run of the unmutated sample failed among the mutant runs, so no
--                  mutant run's failure counts as a kill (report "mutant"."controls")
INSERT INTO flag_names (name, position) VALUES ('tampered', 11), ('unstable_test', 12);
