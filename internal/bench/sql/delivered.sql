-- Acknowledgement time of every delivery (the ack transaction's now()).
SELECT event_id::text, delivered_at FROM outbox.outbox_deliveries WHERE status = 'acknowledged'
