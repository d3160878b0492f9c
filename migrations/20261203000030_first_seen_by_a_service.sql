-- `job_registration.first_seen_at` is when a *service* first registered the job (its alert
-- worker, at start), never when a command first wrote the row.
--
-- Since the recorded start date, the job's planner upserts this row too, and may do so long
-- before any `serve` (`finesettle settle --date` on a fresh install). With the old default,
-- that command's instant became the deployment instant, and the first `serve` days later would
-- see every date since then as missed while its own start-up catch-up was still settling them.
-- A row the planner creates now has no instant; the first registration sets it
-- (`store::alerts::register_job`) and it never moves again.
alter table job_registration
    alter column first_seen_at drop not null,
    alter column first_seen_at drop default;
