-- name: DeliveryAcknowledgedList :many
-- Acknowledgement time of every delivery (the ack transaction's now()).
SELECT event_id, delivered_at::timestamptz AS delivered_at FROM outbox.outbox_deliveries WHERE status = 'acknowledged';
