/** Which llama.cpp binary a process loads: the npm CPU prebuilt, the build installed here, or node-llama-cpp's pick. */
export type LlamaBinary = "cpu" | "lastBuild" | "auto";

/**
 * Options of `getLlama("lastBuild", ...)`. `lastBuild` means the build installed here (ours, or
 * the GPU machine's CUDA one): when it does not load, fail rather than fall back to the npm
 * prebuilt (a silently different engine) or download and build llama.cpp (offline, that hangs
 * for minutes).
 */
export const LAST_BUILD_ONLY = { usePrebuiltBinaries: false, skipDownload: true } as const;
