-- A creation that takes the common case for granted (its session live,
-- room under the pending cap, nothing it asks for already stored) sends its
-- writes behind a guard that checks it (`src/widgets/optimistic.rs`). The
-- guard writes `ok`: whether the guess holds; a false one breaks this
-- CHECK, which stops the statement list before any of its writes runs. One
-- row, written over and over: nothing else reads it.
CREATE TABLE write_guard (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    ok INTEGER NOT NULL CONSTRAINT guess_holds CHECK (ok = 1)
);
INSERT INTO write_guard (id, ok) VALUES (1, 1);
