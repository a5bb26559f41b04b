CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`prefix` text NOT NULL,
	`hash` text NOT NULL,
	`role` text NOT NULL,
	`label` text NOT NULL,
	`created_at` integer NOT NULL,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_prefix_unique` ON `api_keys` (`prefix`);--> statement-breakpoint
CREATE TABLE `blocks` (
	`sha256` text PRIMARY KEY NOT NULL,
	`problem_id` text NOT NULL,
	`token_count` integer NOT NULL,
	`tokens_sha256` text NOT NULL,
	`text_sha256` text NOT NULL,
	`model_fingerprint` text NOT NULL,
	`engine_fingerprint` text NOT NULL,
	`manifest` text NOT NULL,
	`state` text NOT NULL,
	`node_id` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`problem_id`) REFERENCES `problems`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `blocks_problem_idx` ON `blocks` (`problem_id`);--> statement-breakpoint
CREATE INDEX `blocks_node_idx` ON `blocks` (`node_id`);--> statement-breakpoint
CREATE TABLE `flywheel_queue` (
	`id` text PRIMARY KEY NOT NULL,
	`problem` text NOT NULL,
	`fingerprint` text NOT NULL,
	`status` text DEFAULT 'queued' NOT NULL,
	`reference_answer` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`cost` text,
	`result` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `flywheel_open_fingerprint_idx` ON `flywheel_queue` (`fingerprint`) WHERE "flywheel_queue"."status" in ('queued', 'running');--> statement-breakpoint
CREATE INDEX `flywheel_status_idx` ON `flywheel_queue` (`status`,`id`);--> statement-breakpoint
CREATE TABLE `gpu_nodes` (
	`id` text PRIMARY KEY NOT NULL,
	`url` text NOT NULL,
	`model_fingerprint` text NOT NULL,
	`engine_fingerprint` text NOT NULL,
	`capacity` text NOT NULL,
	`health` text NOT NULL,
	`status` text NOT NULL,
	`last_heartbeat_at` integer NOT NULL,
	`missed_heartbeats` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `problems` (
	`id` text PRIMARY KEY NOT NULL,
	`normalized_text` text NOT NULL,
	`fingerprint` text NOT NULL,
	`template` text NOT NULL,
	`params` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `problems_fingerprint_unique` ON `problems` (`fingerprint`);--> statement-breakpoint
CREATE INDEX `problems_template_idx` ON `problems` (`template`);--> statement-breakpoint
CREATE TABLE `queries` (
	`id` text PRIMARY KEY NOT NULL,
	`key_id` text,
	`created_at` integer NOT NULL,
	`fingerprint` text NOT NULL,
	`route` text NOT NULL,
	`source` text NOT NULL,
	`cost` text NOT NULL,
	`confidence` real,
	`verified` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `queries_created_idx` ON `queries` (`created_at`);--> statement-breakpoint
CREATE TABLE `solutions` (
	`id` text PRIMARY KEY NOT NULL,
	`problem_id` text NOT NULL,
	`worked` text NOT NULL,
	`program` text,
	`answer` text NOT NULL,
	`parametric` integer DEFAULT false NOT NULL,
	`verified` integer DEFAULT false NOT NULL,
	`verification` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`problem_id`) REFERENCES `problems`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `solutions_problem_idx` ON `solutions` (`problem_id`,`verified`);