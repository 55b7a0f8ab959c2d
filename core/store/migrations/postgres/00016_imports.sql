-- +goose Up
-- Imports as one concept (docs/agent-tools.md#imports). A profile's tool-provider selectors and
-- eager names are JSON arrays ("[]" for profiles written before them, which import nothing); a
-- profile with pin_imports records the definitions its selectors matched (import_pins, a JSON
-- array, NULL when it does not pin).
ALTER TABLE agent_profiles ADD COLUMN tool_provider_tools TEXT NOT NULL DEFAULT '[]';
ALTER TABLE agent_profiles ADD COLUMN eager_tool_names TEXT NOT NULL DEFAULT '[]';
ALTER TABLE agent_profiles ADD COLUMN pin_imports BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE agent_profiles ADD COLUMN import_pins TEXT;
-- Each served name's definition digest (sdk/announce.DefinitionDigest), written by the
-- announcement door beside the name, which a claim of a pinned call compares with the row's pin.
-- NULL for names announced before this column: a pinned call is not served by such a name until
-- its executor announces again.
ALTER TABLE executor_served_tools ADD COLUMN definition_digest TEXT;
-- The pinned definition digest a pool row's call was frozen with; NULL when not pinned.
ALTER TABLE tasks ADD COLUMN definition_pin TEXT;

-- +goose Down
ALTER TABLE tasks DROP COLUMN definition_pin;
ALTER TABLE executor_served_tools DROP COLUMN definition_digest;
ALTER TABLE agent_profiles DROP COLUMN import_pins;
ALTER TABLE agent_profiles DROP COLUMN pin_imports;
ALTER TABLE agent_profiles DROP COLUMN eager_tool_names;
ALTER TABLE agent_profiles DROP COLUMN tool_provider_tools;
