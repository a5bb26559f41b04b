/** Whether kvgraft's engine build (scripts/build-engine.sh, node-llama-cpp's lastBuild) is present. */
import { getLlama } from "node-llama-cpp";
import { nativeStateApi } from "../../gpu-node/engine/state-memory.js";

/** Whether node-llama-cpp has a local build with our addon additions. */
export async function engineBuildPresent(): Promise<boolean> {
  try {
    const llama = await getLlama("lastBuild", { progressLogs: false });
    const present = nativeStateApi(llama) !== null;
    await llama.dispose();
    return present;
  } catch {
    return false;
  }
}
