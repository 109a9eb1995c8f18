-- A verification's texts with their stored lengths in bytes (a NUL inside counts).
SELECT detail, stderr_tail, length(CAST(detail AS BLOB)), length(CAST(stderr_tail AS BLOB))
FROM verifications WHERE id = ?1;
