ALTER TABLE `solutions` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `solutions` ADD `superseded_at` integer;--> statement-breakpoint
ALTER TABLE `solutions` ADD `superseded_by` text;--> statement-breakpoint
-- Existing solutions are numbered per problem in creation order (ids sort by creation), so the
-- unique index below holds; the newest verified one keeps answering, as before.
UPDATE `solutions` SET `version` = (
	SELECT count(*) FROM `solutions` AS `earlier`
	WHERE `earlier`.`problem_id` = `solutions`.`problem_id` AND `earlier`.`id` <= `solutions`.`id`
);--> statement-breakpoint
CREATE UNIQUE INDEX `solutions_problem_version_idx` ON `solutions` (`problem_id`,`version`);
