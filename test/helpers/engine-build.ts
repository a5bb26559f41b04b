/** Whether kvgraft's engine build (scripts/build-engine.sh, node-llama-cpp's lastBuild) is present. */
import { getLlama } from "node-llama-cpp";
import { nativeStateApi } from "../../gpu-node/engine/state-memory.js";

/** Why tests of the engine build skip here, or null when node-llama-cpp has a local build with our addon additions. */
export async function noEngineBuildReason(): Promise<string | null> {
  try {
    const llama = await getLlama("lastBuild", { progressLogs: false });
    const present = nativeStateApi(llama) !== null;
    await llama.dispose();
    if (present) return null;
  } catch {
    // No local build at all: the same reason.
  }
  return "no kvgraft engine build (node-llama-cpp's lastBuild with the native state API): `bash scripts/build-engine.sh cpu` (~5 min) builds it, then these tests run";
}
