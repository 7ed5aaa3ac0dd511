-- One user and 16,000 sessions for the replay scripts (run.sh).
INSERT INTO users VALUES ('u1','bench','admin','x',0,0) ON CONFLICT DO NOTHING;
INSERT INTO sessions (id, creator_id, title, created_at) SELECT 's'||g, 'u1', 'bench', 0 FROM generate_series(1,16000) g ON CONFLICT DO NOTHING;
ANALYZE;
