-- kforge schema, version 49: the verifier's flag kernel_not_used in flag_names (its line in
-- libs/verify/harness/kforge_harness/vocabulary/flags.txt, after unstable_test):
--   kernel_not_used  the wrapper launched its kernel, but the answer the verifier compared
--                    outside the test (the reference comparison on inputs(), a differential
--                    transform) still agreed with the reference when the kernel's outputs were
--                    replaced after each launch: the host computed it (report "origin")
INSERT INTO flag_names (name, position) VALUES ('kernel_not_used', 13);
