-- The lending library: members, books and loans.
--
-- Ids are `bigint generated always as identity`: compact keys for tables that reach millions of
-- rows, naturally ordered for keyset pagination (`where id > $cursor order by id`), and never
-- chosen by a client. Clients treat them as opaque.

create table member (
    id          bigint generated always as identity primary key,
    name        text not null,
    email       text not null,
    created_at  timestamptz not null default now(),
    -- The API validates these too; the checks keep a buggy client (or a psql session) honest.
    constraint member_name_not_blank check (length(btrim(name)) between 1 and 200),
    constraint member_email_shape check (length(email) <= 254 and email ~ '^[^@[:space:]]+@[^@[:space:]]+$')
);
-- One member per address, whatever its case: the API answers 409 on a duplicate.
create unique index member_email_key on member (lower(email));

create table book (
    id          bigint generated always as identity primary key,
    title       text not null,
    isbn        text,
    created_at  timestamptz not null default now(),
    constraint book_title_not_blank check (length(btrim(title)) between 1 and 500),
    -- ISBN-10 or ISBN-13 without separators (the API strips hyphens and spaces first).
    constraint book_isbn_shape check (isbn is null or isbn ~ '^([0-9]{9}[0-9X]|[0-9]{13})$')
);

create table loan (
    id                bigint generated always as identity primary key,
    member_id         bigint not null references member (id),
    book_id           bigint not null references book (id),
    borrowed_on       date not null,
    due_on            date not null,
    -- When the book came back (instant) and the business date of that instant in the business
    -- zone at the time of the return. The settlement works on business dates only, so the date is
    -- stored rather than recomputed: a later change of FINESETTLE_BUSINESS_TZ never rewrites which
    -- days were overdue.
    returned_at       timestamptz,
    returned_on       date,
    -- Copied from the policy when the loan is created, so that a later policy change never
    -- rewrites history.
    daily_fine_cents  bigint not null,
    created_at        timestamptz not null default now(),
    constraint loan_due_not_before_borrowed check (due_on >= borrowed_on),
    constraint loan_returned_pair check ((returned_at is null) = (returned_on is null)),
    constraint loan_returned_not_before_borrowed check (returned_on is null or returned_on >= borrowed_on),
    constraint loan_daily_fine_range check (daily_fine_cents between 0 and 100000000)
);
-- A book copy is on at most one open loan. Partial unique index: returned loans keep their history.
-- The API maps a violation to 409 by this name.
create unique index loan_one_open_per_book on loan (book_id) where returned_at is null;
create index loan_member_id on loan (member_id, id);
-- The accrual looks for loans with an overdue day in a month: open ones by due date, returned
-- ones by return date. Both partial indexes stay small relative to the table.
create index loan_open_due_on on loan (due_on) where returned_on is null;
create index loan_returned_on on loan (returned_on) where returned_on is not null;
