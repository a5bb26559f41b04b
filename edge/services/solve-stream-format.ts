/** The wire format of `POST /v1/solve` with `stream: true` (documented by edge/stream-schemas.ts). */
import { type SseFormat, sseEvent } from "../../shared/sse.js";
import type { SolveEvent } from "./solve-stream.service.js";

/** `token` events with their text, then `result` (the JSON answer) or `error`. */
export const solveStreamFormat: SseFormat<SolveEvent> = {
  event: (e) => (e.type === "token" ? sseEvent("token", { text: e.text }) : sseEvent("result", e.response)),
  error: (status, body) => sseEvent("error", { ...(body as object), status }),
};
