-- +goose Up
-- One row per input a spawn or send call addressed to a conversation
-- (docs/agent-tools.md#delegation-and-conversations): keyed by the call that made it (run_id,
-- call_key), so a re-evaluated call posts nothing twice and answers its first receipt; receipt_key
-- is the receipt's stable name, send:<run public id>:<call key> (spawn:… for a brief). public_id is
-- the input's id, which a queued input's turn takes too. A scheduled input waits here (status
-- pending, deliver_at) and takes its queue position when the sweeper releases it; a steer waits
-- here until the running reply's next seal carries it (steer_run_id, delivered_with). reply_owed
-- marks a request whose reply returns to the sending run as kernel mail (a spawn brief, a queued or
-- scheduled send to one of the sender's own children).
CREATE TABLE conversation_requests (
    id                                 INTEGER PRIMARY KEY,
    public_id                          TEXT    NOT NULL UNIQUE,
    receipt_key                        TEXT    NOT NULL UNIQUE,
    run_id                             INTEGER NOT NULL REFERENCES runs (id),
    call_key                           TEXT    NOT NULL,
    kind                               TEXT    NOT NULL CHECK (kind IN ('spawn', 'send')),
    delivery                           TEXT    NOT NULL CHECK (delivery IN ('queued', 'steering', 'scheduled')),
    conversation_id                    INTEGER NOT NULL REFERENCES conversations (id),
    sender_conversation_id             INTEGER NOT NULL REFERENCES conversations (id),
    author_public_id                   TEXT    NOT NULL,
    answering_agent_id                 INTEGER NOT NULL REFERENCES agents (id),
    input_text                         TEXT    NOT NULL,
    model                              TEXT    NOT NULL,
    turn_id                            INTEGER REFERENCES turns (id),
    steer_run_id                       INTEGER REFERENCES runs (id),
    delivered_with                     TEXT,
    deliver_at                         INTEGER,
    reply_owed                         BOOLEAN NOT NULL,
    status                             TEXT    NOT NULL CHECK (status IN ('pending', 'posted', 'withdrawn')),
    receipt                            TEXT    NOT NULL,
    created_at                         INTEGER NOT NULL,
    released_at                        INTEGER,
    UNIQUE (run_id, call_key)
);
CREATE INDEX conversation_requests_turn ON conversation_requests (turn_id);
CREATE INDEX conversation_requests_conversation ON conversation_requests (conversation_id, run_id);
CREATE INDEX conversation_requests_due ON conversation_requests (deliver_at) WHERE status = 'pending' AND delivery = 'scheduled';
CREATE INDEX conversation_requests_steer ON conversation_requests (steer_run_id) WHERE status = 'pending' AND delivery = 'steering';

-- Labels are unique among one parent conversation's children
-- (docs/agent-tools.md#delegation-and-conversations).
CREATE UNIQUE INDEX conversations_child_label ON conversations (parent_conversation_id, label) WHERE label IS NOT NULL;

-- +goose Down
DROP INDEX conversations_child_label;
DROP TABLE conversation_requests;
