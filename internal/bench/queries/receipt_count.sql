-- name: ReceiptCount :one
-- How many receipts the consumer stored (one per delivery at the end).
SELECT count(*) FROM bench.receipts;
