/**
 * The events of `POST /v1/solve` with `stream: true`, for /openapi.json. Each event is one
 * server-sent event: an `event:` line naming it and one `data:` line of JSON.
 */
import { z } from "zod";
import { errorBodySchema } from "../shared/protocol.js";
import { solveResponseSchema } from "./schemas.js";

export const solveTokenEventSchema = z.object({
  text: z.string().describe("Generated text since the previous token event (one or more tokens)."),
});

export const solveErrorEventSchema = errorBodySchema.extend({
  status: z.number().int().describe("The HTTP status the error would have had before the stream began."),
});

/** What a streamed solve sends, as the document describes it. */
export const solveStreamSchema = z
  .union([
    z.object({ event: z.literal("token"), data: solveTokenEventSchema }),
    z.object({ event: z.literal("result"), data: solveResponseSchema }),
    z.object({ event: z.literal("error"), data: solveErrorEventSchema }),
  ])
  .describe(
    "Server-sent events, each `event: <name>` and `data: <JSON>`: `token` events (grafts and model " +
      "solves; the library fast path and transfers send none), then exactly one `result` (the same body " +
      "as the JSON answer) or one `error` (a failure after the stream began). A failure before the first " +
      "event is a plain JSON error with its status. Closing the connection cancels the GPU node's work.",
  );
