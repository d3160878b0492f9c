-- Checks the existing alerts against the widened `alert_kind_known` of the previous migration,
-- which added it `not valid`. A migration of its own so that it runs in its own transaction:
-- validation takes a share update exclusive lock on `alert`, so the replicas' reads, raises and
-- resolutions go on while it scans. Every existing row passes (the new list only adds a kind).
alter table alert validate constraint alert_kind_known;
