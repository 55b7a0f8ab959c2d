-- +goose Up
-- A model answer's ordered content when it holds provider blocks (a real provider's thinking
-- or tool search blocks), replayed in the assistant entry of later requests to the same model.
ALTER TABLE tasks ADD COLUMN answer_content TEXT;

-- An image upload's dimensions, read once from its header when a request is sealed for a model
-- with an edge limit; NULL until read (and for anything that is not an image).
ALTER TABLE uploads ADD COLUMN image_width BIGINT;
ALTER TABLE uploads ADD COLUMN image_height BIGINT;

-- The uploads a provider refused for a model: every later request to that model renders the
-- upload as an index line instead of failing again.
CREATE TABLE media_refusals (
    upload_public_id TEXT    NOT NULL,
    model_ref        TEXT    NOT NULL,
    created_at       BIGINT NOT NULL,
    PRIMARY KEY (upload_public_id, model_ref)
);

-- +goose Down
DROP TABLE media_refusals;
ALTER TABLE uploads DROP COLUMN image_height;
ALTER TABLE uploads DROP COLUMN image_width;
ALTER TABLE tasks DROP COLUMN answer_content;
