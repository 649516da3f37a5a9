-- A MetaCortex store from before spaces (schema version 5), as the code at commit
-- 191bf6e wrote it: its SQLiteStore, MemoryService with tests/fakes.HashingEmbedder
-- (test-hashing:64), ClientManager and TokenStore, then every table's rows written
-- out as plain SQL (FTS5's shadow tables through memory_terms itself). Test data
-- for tests/spaces/test_migration.py, never product code. It holds:
--   house: 01m93e0b8b18py0xsx3e41fg72 active, superseding 01m93e0bhqbak85vekwg1abscr
--          (deprecated, changed); 01m93e0bhre83sg0c808tj09js active;
--          01m93e0bhvb3wj4sgzt7z599xj erased (a tombstone)
--   trip:  01m93e0bhre83sg0c808tj09jt and 01m93e0bhse8p7hb61hgcy3hh3 (deprecated, merged
--          into 01m93e0bhtagwkx7jn7j2vwxzy); 01m93e0bhtagwkx7jn7j2vwxzz wip
--   a stored client endpoint old-laptop (save, search, fetch, list) and an OAuth grant
--   (preset read-write) with an access token for http://localhost/mcp, both without
--   spaces or person; their tokens are in the test.
-- The portable backup beside it (backup/) is that version's export_portable of it.
PRAGMA foreign_keys=OFF;
BEGIN;
CREATE TABLE schema_migrations ( version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
CREATE TABLE store_meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
CREATE TABLE memories (
            seq                 INTEGER PRIMARY KEY,
            id                  TEXT NOT NULL UNIQUE,
            content             TEXT NOT NULL,
            retrieval_text      TEXT NOT NULL,
            module_name         TEXT NOT NULL,
            branch_state        TEXT NOT NULL,
            modality            TEXT NOT NULL,
            created_at          INTEGER NOT NULL,
            updated_at          INTEGER NOT NULL,
            valid_from          INTEGER,
            valid_until         INTEGER,
            superseded_by       TEXT,
            supersession_reason TEXT,
            initiator           TEXT,
            origin              TEXT,
            source_session      TEXT,
            derived_from        TEXT NOT NULL DEFAULT '[]',
            confidence          REAL,
            artifact_refs       TEXT NOT NULL DEFAULT '[]',
            merge_method        TEXT,
            embedding           BLOB NOT NULL,
            change_seq          INTEGER NOT NULL
        );
CREATE INDEX memories_by_state_time ON memories (branch_state, created_at, id);
CREATE INDEX memories_by_topic_time ON memories (module_name, branch_state, created_at, id);
CREATE INDEX memories_by_change ON memories (change_seq);
CREATE VIRTUAL TABLE memory_terms
            USING fts5 (terms, tokenize = 'unicode61 remove_diacritics 0');
CREATE TABLE write_fingerprints (
            fingerprint TEXT PRIMARY KEY,
            memory_id   TEXT NOT NULL,
            written_at  INTEGER NOT NULL
        );
CREATE INDEX write_fingerprints_by_time ON write_fingerprints (written_at);
CREATE TABLE events (
            seq        INTEGER PRIMARY KEY,
            collection TEXT NOT NULL,
            timestamp  INTEGER NOT NULL,
            expires_at INTEGER,
            fields     TEXT NOT NULL
        );
CREATE INDEX events_by_collection_time ON events (collection, timestamp);
CREATE INDEX events_by_expiry ON events (expires_at);
CREATE TABLE auth_state (
            kind       TEXT NOT NULL,
            key        TEXT NOT NULL,
            data       TEXT NOT NULL,
            expires_at INTEGER,
            consumed   INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (kind, key)
        );
CREATE INDEX auth_state_by_expiry ON auth_state (expires_at);
CREATE TABLE erased_memories (
            id         TEXT PRIMARY KEY,
            seq        INTEGER NOT NULL UNIQUE,
            erased_at  INTEGER NOT NULL,
            erased_by  TEXT NOT NULL,
            change_seq INTEGER NOT NULL
        );
CREATE INDEX erased_memories_by_change ON erased_memories (change_seq);
CREATE INDEX memories_by_replacement ON memories (superseded_by)
            WHERE superseded_by IS NOT NULL;
CREATE INDEX memories_filter ON memories (
            seq, branch_state, module_name, origin, created_at, valid_from, valid_until,
            supersession_reason
        );
INSERT INTO schema_migrations (version, applied_at) VALUES (1, '2026-12-05T15:43:46.438Z');
INSERT INTO schema_migrations (version, applied_at) VALUES (2, '2026-12-05T15:43:46.439Z');
INSERT INTO schema_migrations (version, applied_at) VALUES (3, '2026-12-05T15:43:46.439Z');
INSERT INTO schema_migrations (version, applied_at) VALUES (4, '2026-12-05T15:43:46.439Z');
INSERT INTO schema_migrations (version, applied_at) VALUES (5, '2026-12-05T15:43:46.439Z');
INSERT INTO store_meta (key, value) VALUES ('change_seq', '12');
INSERT INTO store_meta (key, value) VALUES ('embedding_model', 'test-hashing');
INSERT INTO store_meta (key, value) VALUES ('embedding_dimension', '64');
INSERT INTO memories (seq, id, content, retrieval_text, module_name, branch_state, modality, created_at, updated_at, valid_from, valid_until, superseded_by, supersession_reason, initiator, origin, source_session, derived_from, confidence, artifact_refs, merge_method, embedding, change_seq) VALUES (1, '01m93e0b8b18py0xsx3e41fg72', 'The boiler was serviced in October 2026.', 'The boiler was serviced in October 2026.', 'house', 'active', 'text', 1796485426443, 1796485426443, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '[]', NULL, '[]', NULL, X'00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000003f00000000000000000000000000000000000000000000003f00000000000000000000003f000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000003f0000000000000000000000000000000000000000', 1);
INSERT INTO memories (seq, id, content, retrieval_text, module_name, branch_state, modality, created_at, updated_at, valid_from, valid_until, superseded_by, supersession_reason, initiator, origin, source_session, derived_from, confidence, artifact_refs, merge_method, embedding, change_seq) VALUES (2, '01m93e0bhqbak85vekwg1abscr', 'The boiler is serviced every spring.', 'The boiler is serviced every spring.', 'house', 'deprecated', 'text', 1796485426743, 1796485426743, NULL, 1796485426743, '01m93e0b8b18py0xsx3e41fg72', 'changed', NULL, NULL, NULL, '[]', NULL, '[]', NULL, X'00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000003f000000000000003f0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000003f00000000000000000000000000000000000000000000000000000000000000000000003f00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000', 3);
INSERT INTO memories (seq, id, content, retrieval_text, module_name, branch_state, modality, created_at, updated_at, valid_from, valid_until, superseded_by, supersession_reason, initiator, origin, source_session, derived_from, confidence, artifact_refs, merge_method, embedding, change_seq) VALUES (3, '01m93e0bhre83sg0c808tj09js', 'The guest wifi password is on the fridge.', 'The guest wifi password is on the fridge.', 'house', 'active', 'text', 1796485426744, 1796485426744, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '[]', NULL, '[]', NULL, X'0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000003f000000000000000000000000000000000000000000000000000000000000003f000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000003f00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000003f0000000000000000', 4);
INSERT INTO memories (seq, id, content, retrieval_text, module_name, branch_state, modality, created_at, updated_at, valid_from, valid_until, superseded_by, supersession_reason, initiator, origin, source_session, derived_from, confidence, artifact_refs, merge_method, embedding, change_seq) VALUES (4, '01m93e0bhre83sg0c808tj09jt', 'Trip idea: the coast in June.', 'Trip idea: the coast in June.', 'trip', 'deprecated', 'text', 1796485426744, 1796485426746, NULL, NULL, '01m93e0bhtagwkx7jn7j2vwxzy', NULL, NULL, NULL, NULL, '[]', NULL, '[]', NULL, X'000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000003f0000000000000000000000000000003f00000000000000000000000000000000000000000000000000000000000000000000003f00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000003f00000000000000000000000000000000000000000000000000000000', 8);
INSERT INTO memories (seq, id, content, retrieval_text, module_name, branch_state, modality, created_at, updated_at, valid_from, valid_until, superseded_by, supersession_reason, initiator, origin, source_session, derived_from, confidence, artifact_refs, merge_method, embedding, change_seq) VALUES (5, '01m93e0bhse8p7hb61hgcy3hh3', 'Trip idea: rent bikes.', 'Trip idea: rent bikes.', 'trip', 'deprecated', 'text', 1796485426745, 1796485426746, NULL, NULL, '01m93e0bhtagwkx7jn7j2vwxzy', NULL, NULL, NULL, NULL, '[]', NULL, '[]', NULL, X'000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000003f0000000000000000000000000000003f000000000000003f0000000000000000000000000000000000000000000000000000003f00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000', 9);
INSERT INTO memories (seq, id, content, retrieval_text, module_name, branch_state, modality, created_at, updated_at, valid_from, valid_until, superseded_by, supersession_reason, initiator, origin, source_session, derived_from, confidence, artifact_refs, merge_method, embedding, change_seq) VALUES (6, '01m93e0bhtagwkx7jn7j2vwxzy', 'Trip idea: the coast in June. Trip idea: rent bikes.', 'Trip idea: the coast in June. Trip idea: rent bikes.', 'trip', 'active', 'text', 1796485426746, 1796485426746, NULL, NULL, NULL, NULL, 'agent', 'agent_inferred', NULL, '["01m93e0bhre83sg0c808tj09jt", "01m93e0bhse8p7hb61hgcy3hh3"]', NULL, '[]', 'offline_sentence_merge', X'0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000077d6083f00000000000000000000000077d6083f0000000077d6883e00000000000000000000000000000000000000000000000077d6083f000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000077d6883e00000000000000000000000000000000000000000000000000000000', 7);
INSERT INTO memories (seq, id, content, retrieval_text, module_name, branch_state, modality, created_at, updated_at, valid_from, valid_until, superseded_by, supersession_reason, initiator, origin, source_session, derived_from, confidence, artifact_refs, merge_method, embedding, change_seq) VALUES (7, '01m93e0bhtagwkx7jn7j2vwxzz', 'Trip budget: to be decided.', 'Trip budget: to be decided.', 'trip', 'wip', 'text', 1796485426746, 1796485426746, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '[]', NULL, '[]', NULL, X'00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000003acd133f00000000000000000000000000000000000000000000000000000000000000003acd133f00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000003acd133f00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000', 10);
INSERT INTO memory_terms(rowid, terms) VALUES (1, 'boiler servic octob 2026');
INSERT INTO memory_terms(rowid, terms) VALUES (2, 'boiler servic everi spring');
INSERT INTO memory_terms(rowid, terms) VALUES (3, 'guest wifi password fridg');
INSERT INTO memory_terms(rowid, terms) VALUES (4, 'trip idea coast june');
INSERT INTO memory_terms(rowid, terms) VALUES (5, 'trip idea rent bike');
INSERT INTO memory_terms(rowid, terms) VALUES (6, 'trip idea coast june trip idea rent bike');
INSERT INTO memory_terms(rowid, terms) VALUES (7, 'trip budget decid');
INSERT INTO write_fingerprints (fingerprint, memory_id, written_at) VALUES ('f9537bb1918d40073b686c5c6b64d04cc8e794fc00315eeb0157063123ef48e6', '01m93e0b8b18py0xsx3e41fg72', 1796485426443);
INSERT INTO write_fingerprints (fingerprint, memory_id, written_at) VALUES ('ea5811bf14a6063442cde19604fca34248b14db2c711d0226aa5086d42b61e3c', '01m93e0bhqbak85vekwg1abscr', 1796485426743);
INSERT INTO write_fingerprints (fingerprint, memory_id, written_at) VALUES ('21ad400e798629be5986d2ff81ff51519a95a8b7beeb2c4ce03e8effdb08b44a', '01m93e0bhre83sg0c808tj09js', 1796485426744);
INSERT INTO write_fingerprints (fingerprint, memory_id, written_at) VALUES ('bbf2761d05f08b766af16a69e6db283d9f5d239bf52d92b65af510736e70c63d', '01m93e0bhre83sg0c808tj09jt', 1796485426744);
INSERT INTO write_fingerprints (fingerprint, memory_id, written_at) VALUES ('a421bd5fa83e55b1f2ba126b274721bfeb0c854a7a04aeed959171fa9186f45e', '01m93e0bhse8p7hb61hgcy3hh3', 1796485426745);
INSERT INTO write_fingerprints (fingerprint, memory_id, written_at) VALUES ('6fc4bb8f73a2f963c3bf56d20d4a2ac6c2337ceccae8151e8d63fb57fe9bcc8c', '01m93e0bhtagwkx7jn7j2vwxzz', 1796485426746);
INSERT INTO auth_state (kind, key, data, expires_at, consumed) VALUES ('client_profile', 'old-laptop', '{"entry": {"id": "old-laptop", "token_sha256": "910cacff6940103f31e6c6b6da8e14a6f9f46a7fe5d598182a00350fa2de8c50", "allowedTools": ["save_context", "search_context", "fetch_context", "list_context"]}, "paused": false, "created_at": "2026-12-05T15:43:46.760Z", "created_by": "owner", "changed_at": "2026-12-05T15:43:46.760Z"}', NULL, 0);
INSERT INTO auth_state (kind, key, data, expires_at, consumed) VALUES ('client_profiles', 'changed', '{"version": "8a13563cfd8a8671645c4bf725fb8ac1", "at": "2026-12-05T15:43:46.762Z"}', NULL, 0);
INSERT INTO auth_state (kind, key, data, expires_at, consumed) VALUES ('grant', '1eb183e0f0792f43', '{"client_id": "https://agent.example/client.json", "client_name": "Agent", "redirect_host": "agent.example", "resource": "http://localhost/mcp", "scopes": ["memory:read", "memory:write"], "preset": "read-write", "chatgpt_tools": false, "created_at": "2026-12-05T15:43:46.762Z"}', 4950085426762, 0);
INSERT INTO auth_state (kind, key, data, expires_at, consumed) VALUES ('access_token', 'af7d0890511ba656d053ee5476374b77f4ba510ed307fa98bbee64d828237d56', '{"grant": "1eb183e0f0792f43", "client_id": "https://agent.example/client.json", "resource": "http://localhost/mcp", "scopes": ["memory:read", "memory:write"]}', 4950085426763, 0);
INSERT INTO erased_memories (id, seq, erased_at, erased_by, change_seq) VALUES ('01m93e0bhvb3wj4sgzt7z599xj', 8, 1796485426747, 'the owner (console)', 12);
COMMIT;
