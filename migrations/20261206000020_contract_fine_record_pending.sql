-- Contract (0.2.0): applied only by `finesettle migrate --contract`, once every replica runs
-- 0.2.0 (docs/DESIGN.md §11).
--
-- 0.2.0 finds the PENDING fines through `fine_pending` (expand migration `20261206000010`).
-- `fine_record_pending` is what 0.1.1's settlement walks (`where status = 'PENDING' order by
-- settle_month, loan_id`): without it that walk reads the whole table for every batch. So it is
-- dropped only now, and 0.1.1 can no longer serve this schema. Its predicate names `status`,
-- which made every settle update of a fine a non-HOT one; without it the update writes no index
-- entry (docs/DESIGN.md §4.9).
drop index fine_record_pending;

update schema_compat set oldest_release = '0.2.0';
