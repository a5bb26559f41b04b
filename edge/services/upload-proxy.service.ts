/**
 * The console's block upload goes through the edge: the browser sends each import request (start,
 * chunk, commit) to the edge, which forwards it to the configured GPU node's import API with the
 * upload grant the browser holds. Browsers cannot reach the node itself (it sits behind Cloudflare
 * Access and answers no cross-origin requests); the grant still limits every request to the one
 * block it was issued for, and the edge adds only the node's Access headers.
 */
import { unavailable } from "../../shared/errors.js";
import { CHUNK_SHA256_HEADER, gpuPaths } from "../../shared/protocol.js";
import { UPLOAD_GRANT_HEADER } from "../../shared/upload-grant.js";
import type { Deps } from "../http.js";

/** One import step, as the console sends it. */
export type ImportStep =
  | { step: "start"; body: string }
  | { step: "chunk"; importId: string; index: number; body: ArrayBuffer; chunkSha256: string }
  | { step: "commit"; importId: string };

/** Forwards one import step to the GPU node with the grant; the node's answer comes back as it is. */
export async function forwardImportStep(
  deps: Pick<Deps, "config">,
  grant: string,
  step: ImportStep,
): Promise<Response> {
  const base = deps.config.gpu.url || deps.config.gpu.publicUrl;
  if (!base) throw unavailable("gpu_unavailable", "No GPU node is configured on this edge.");
  const headers: Record<string, string> = {
    ...deps.config.gpu.headers,
    [UPLOAD_GRANT_HEADER]: grant,
  };
  const request =
    step.step === "start"
      ? { path: gpuPaths.imports, method: "POST", type: "application/json", body: step.body }
      : step.step === "chunk"
        ? {
            path: gpuPaths.importChunk(step.importId, step.index),
            method: "PUT",
            type: "application/octet-stream",
            body: step.body,
          }
        : { path: gpuPaths.importCommit(step.importId), method: "POST", type: null, body: null };
  if (request.type) headers["content-type"] = request.type;
  if (step.step === "chunk") headers[CHUNK_SHA256_HEADER] = step.chunkSha256;
  const res = await fetch(`${base}${request.path}`, { method: request.method, headers, body: request.body });
  return new Response(res.body, {
    status: res.status,
    headers: { "content-type": res.headers.get("content-type") ?? "application/json" },
  });
}
