-- name: RecordPublication
-- OB-PUB-1: call in the ack transaction after the success finish and the
-- acknowledged delivery update. Returns complete | not_complete; raises
-- OW009 when the ack disagrees with the frozen event/member/delivery/attempt.
SELECT outbox.record_publication($1::uuid, $2, $3, $4::uuid, $5::uuid, $6, $7, $8, $9, $10, $11, $12)
