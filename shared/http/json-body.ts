/** The one JSON body reader: 400 `invalid_json` when the body is not JSON, 400 `invalid_request` when it fails its schema. */
import type { Context } from "hono";
import type { z } from "zod";
import { badRequest } from "../errors.js";

export interface JsonBodyOptions {
  /** An empty body reads as `{}` (for requests whose fields all have defaults); default: 400. */
  emptyAsObject?: boolean;
}

/** Parses JSON text with `schema` (see readJson); `what` names the body in the messages. */
export function parseJson<S extends z.ZodType>(
  text: string,
  schema: S,
  options: JsonBodyOptions & { what?: string } = {},
): z.output<S> {
  const what = options.what ?? "The request body";
  if (text.trim() === "") {
    if (!options.emptyAsObject) throw badRequest("invalid_json", `${what} is empty.`);
    return schema.parse({});
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest("invalid_json", `${what} is not valid JSON.`);
  }
  return schema.parse(value);
}

/** Reads the request's body as JSON and validates it with `schema`. */
export async function readJson<S extends z.ZodType>(
  c: Context,
  schema: S,
  options: JsonBodyOptions = {},
): Promise<z.output<S>> {
  return parseJson(await c.req.text(), schema, options);
}
