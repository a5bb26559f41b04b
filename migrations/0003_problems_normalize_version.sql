-- Problems normalized before NORMALIZE_VERSION 2 (shared/normalize.ts) keep version 1 and never answer:
-- that normalization merged problems that differ (3¾ read as 33/4, A as a). A new deposit updates the row.
ALTER TABLE `problems` ADD `normalize_version` integer DEFAULT 1 NOT NULL;