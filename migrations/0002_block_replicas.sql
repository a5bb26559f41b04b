CREATE TABLE `block_replicas` (
	`block_sha256` text NOT NULL,
	`node_id` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`block_sha256`, `node_id`),
	FOREIGN KEY (`block_sha256`) REFERENCES `blocks`(`sha256`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `block_replicas_node_idx` ON `block_replicas` (`node_id`);