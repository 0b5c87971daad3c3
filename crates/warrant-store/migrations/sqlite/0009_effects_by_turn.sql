-- A turn's effects are read by conversation and turn (replay, the review page's turn view, the
-- MCP gateway's answer to a repeated request); without this index each such read scanned every
-- effect, so replaying a store took time in the square of its turns.
-- migrations/postgres/0009_effects_by_turn.sql is the same step.
CREATE INDEX effects_conversation_turn ON effects (conversation, turn, id);
