-- 0028: a received one-to-one entry names the device that sent it
-- (history.sent_by, the column 0027 added for sent copies; one meaning:
-- the device that wrote the message, when it is not this one). A device
-- of a person keeps the messages of all the person's devices in one
-- conversation, and only the device that sent a message edits or deletes
-- it (engine/action.go peerActionTarget): the entry, not a finalized
-- record keyed by (sender, id) alone, now says which device that is. The
-- engine writes it on every received entry from here on, and a history
-- archive carries it (record kind 11).
--
-- The received entries stored before this migration get the one device
-- of the conversation's person (the user of the entry's peer) with a
-- committed finalized record of their ID (not one of a group message:
-- grp, 0025, set); an entry with none (a pruned
-- record, an imported entry) or with two or more (an ID another device of
-- the person reused, as a hostile device would) keeps NULL, and the
-- engine's earlier rule decides for it. The records are scanned once and
-- the entries found by ID through an index that lives only while this
-- runs (a received message writes no extra tree afterwards).
CREATE INDEX history_received_id_0028 ON history (id) WHERE direction = 1;

WITH cand(seq, sender) AS (
    SELECT h.seq, f.sender FROM finalized f
    JOIN history h INDEXED BY history_received_id_0028 ON h.id = f.id AND h.direction = 1
    WHERE f.outcome = 1 AND f.grp IS NULL AND instr(f.sender, '/') > 1
        AND substr(h.peer, 1, instr(h.peer, '/')) = substr(f.sender, 1, instr(f.sender, '/'))
),
one(seq, sender) AS (
    SELECT seq, min(sender) FROM cand GROUP BY seq HAVING count(*) = 1
)
UPDATE history SET sent_by = (SELECT one.sender FROM one WHERE one.seq = history.seq)
WHERE seq IN (SELECT seq FROM one);

DROP INDEX history_received_id_0028;
