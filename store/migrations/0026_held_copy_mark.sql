-- 0026: a sibling's sent action copy (frame kind 17) waiting for its
-- target is marked in inbound.action with heldCopyMark (16) added, so that
-- the lists and counts of what the person decides leave it out. A copy
-- stored by a build before the mark has the bare content type. Its frame
-- is sealed, so SQL cannot tell it from another waiting action: the
-- migration's Go step (store.markHeldCopies) opens the frame of every
-- waiting action not marked and adds the mark to the kind-17 ones, in
-- this migration's transaction. Nothing else changes.
SELECT 1;
