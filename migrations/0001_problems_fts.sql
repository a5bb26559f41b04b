-- Custom migration: FTS5 index over problem templates for BM25 lexical routing.
-- One row per distinct template: many problems share a template (new numbers), and counting each
-- would lower the IDF of exactly the templates the library knows best. Standalone (not
-- external-content) because a template has no row of its own to point at. Triggers keep it in
-- sync on every write path; a later migration that rebuilds `problems` (drizzle's copy-and-rename)
-- must recreate these triggers.
CREATE VIRTUAL TABLE `problems_fts` USING fts5(
	`template`,
	tokenize = 'porter unicode61 remove_diacritics 2'
);
--> statement-breakpoint
INSERT INTO `problems_fts` (`template`) SELECT DISTINCT `template` FROM `problems`;
--> statement-breakpoint
CREATE TRIGGER `problems_fts_after_insert` AFTER INSERT ON `problems`
WHEN NOT EXISTS (SELECT 1 FROM `problems` WHERE `template` = new.`template` AND `id` <> new.`id`)
BEGIN
	INSERT INTO `problems_fts` (`template`) VALUES (new.`template`);
END;
--> statement-breakpoint
CREATE TRIGGER `problems_fts_after_delete` AFTER DELETE ON `problems`
WHEN NOT EXISTS (SELECT 1 FROM `problems` WHERE `template` = old.`template`)
BEGIN
	DELETE FROM `problems_fts` WHERE `template` = old.`template`;
END;
--> statement-breakpoint
CREATE TRIGGER `problems_fts_after_update` AFTER UPDATE OF `template` ON `problems`
WHEN old.`template` <> new.`template`
BEGIN
	DELETE FROM `problems_fts` WHERE `template` = old.`template`
		AND NOT EXISTS (SELECT 1 FROM `problems` WHERE `template` = old.`template`);
	INSERT INTO `problems_fts` (`template`) SELECT new.`template`
		WHERE NOT EXISTS (SELECT 1 FROM `problems` WHERE `template` = new.`template` AND `id` <> new.`id`);
END;
