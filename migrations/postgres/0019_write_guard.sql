-- A creation that takes the common case for granted (its session live,
-- room under the pending cap, nothing it asks for already stored) sends its
-- writes behind a guard that checks it (`src/widgets/optimistic.rs`). On
-- PostgreSQL the guard writes a row only when the guess is false, and that
-- row breaks this CHECK, which fails the statement before it commits any of
-- its writes. It never holds a row, so concurrent creations share no row
-- lock in it.
CREATE TABLE write_guard (
    ok BIGINT NOT NULL CONSTRAINT guess_holds CHECK (ok = 1)
);
