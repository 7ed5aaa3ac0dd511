-- "Always" rules by command pattern as well as by exact input: a rule with
-- match_kind 'pattern' keeps in `input` a command pattern such as
-- `git status *` (`*` matches any run of characters, a pattern without one
-- covers the command and any arguments after it). Such rules only ever
-- match commands free of shell metacharacters (checked in code), so
-- `git status; rm -rf ~` never matches `git status *`.
ALTER TABLE approval_rules ADD COLUMN match_kind TEXT NOT NULL DEFAULT 'exact'
    CHECK (match_kind IN ('exact', 'pattern'));

-- The live-rule uniqueness now includes the kind, so an exact input and a
-- pattern with the same text cannot collide.
DROP INDEX approval_rules_live;
CREATE UNIQUE INDEX approval_rules_live
    ON approval_rules (owner_id, tool, match_kind, input) WHERE revoked_at IS NULL;
