-- +goose Up
-- What a row addressed to a Runner's tool freezes of the announcement (its target and its effect
-- profile, as stored text), written beside each served name by the announcement door, so that the
-- create statement (store.CreateRun) addresses a routed row from this table alone. NULL for names
-- announced before this column: the statement does not take them, and the create's transaction
-- addresses such a row as before, until the executor announces again.
ALTER TABLE executor_served_tools ADD COLUMN frozen_target TEXT;
ALTER TABLE executor_served_tools ADD COLUMN frozen_profile TEXT;

-- +goose Down
ALTER TABLE executor_served_tools DROP COLUMN frozen_profile;
ALTER TABLE executor_served_tools DROP COLUMN frozen_target;
