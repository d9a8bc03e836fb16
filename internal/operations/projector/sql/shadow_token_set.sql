-- name: ShadowTokenSet
-- Binds a shadow build's claim token to the transaction (transaction-local
-- setting): operations.shadow_fence() refuses every shadow write without the
-- current token, after a pause, outside the frozen candidate or after the
-- switch (migration 00003). Loaded, not sqlc: set_config's result is unused.
SELECT set_config('oceanway.shadow_token', @token::text, true)
