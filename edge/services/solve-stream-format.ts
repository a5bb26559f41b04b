/** The wire format of `POST /v1/solve` with `stream: true` (documented by edge/stream-schemas.ts). */
import type { SolveEvent, StreamFormat } from "./solve-stream.service.js";

const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** `token` events with their text, then `result` (the JSON answer) or `error`. */
export const solveStreamFormat: StreamFormat<SolveEvent> = {
  event: (e) => (e.type === "token" ? sse("token", { text: e.text }) : sse("result", e.response)),
  error: (status, body) => sse("error", { ...(body as object), status }),
};
