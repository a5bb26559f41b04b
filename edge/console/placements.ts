/** Where each of some blocks lives in the edge's GPU node pool. */
import type { BlockPlacement } from "../cluster/gpu-pool.js";
import type { Deps } from "../http.js";

export async function blockPlacements(
  deps: Pick<Deps, "gpu">,
  blockIds: string[],
): Promise<Map<string, BlockPlacement>> {
  const entries = await Promise.all(blockIds.map(async (id) => [id, await deps.gpu.placement(id)] as const));
  return new Map(entries);
}
