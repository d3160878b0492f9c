-- Idempotency keys belong to the caller that sent them: an admin who reuses a librarian's key
-- must not be answered with the librarian's stored response, nor be refused because the
-- librarian's body differed. `caller` is a digest of the bearer token (never the token itself;
-- see http/auth.rs), so the key space of one token is its own.
--
-- A replay must answer what the first request answered: `response_location` keeps the Location
-- header of a 201 (null when the response had none).
--
-- Rows stored before this migration get caller '' and match no caller: a retry that spans the
-- upgrade is performed as a new request. Keys are meant for retries within minutes, and an
-- upgrade is not silent about it (the release notes of issue 12 say so).
alter table idempotency_key add column caller text not null default '';
alter table idempotency_key add column response_location text;
alter table idempotency_key drop constraint idempotency_key_pkey;
alter table idempotency_key add primary key (caller, scope, key);
-- The default only served the existing rows: every new row names its caller.
alter table idempotency_key alter column caller drop default;
