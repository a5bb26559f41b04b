/** Where each of some blocks lives, when the edge runs a GPU node pool (else null: nothing to show). */
import { type BlockPlacement, isGpuPool } from "../cluster/gpu-pool.js";
import type { Deps } from "../http.js";

export async function blockPlacements(
  deps: Pick<Deps, "gpu">,
  blockIds: string[],
): Promise<Map<string, BlockPlacement> | null> {
  const pool = deps.gpu;
  if (!isGpuPool(pool)) return null;
  const entries = await Promise.all(blockIds.map(async (id) => [id, await pool.placement(id)] as const));
  return new Map(entries);
}
