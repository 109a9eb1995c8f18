SELECT target, result, error, kernel FROM verification_targets
WHERE verification_id = ?1 ORDER BY target;
