import { writeFile } from "node:fs/promises";

/** Drops the page cache so the next read comes from disk; false where not permitted (not root). */
export async function dropPageCache(): Promise<boolean> {
  try {
    await writeFile("/proc/sys/vm/drop_caches", "3\n");
    return true;
  } catch {
    return false;
  }
}
