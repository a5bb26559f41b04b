/**
 * fast-check arbitraries derived from the edge's zod schemas (through `z.toJSONSchema`, the same
 * path /openapi.json takes), so the fuzzer follows the schemas as they change: `valid(schema)`
 * generates inputs the schema accepts, `invalid(schema)` near misses it must refuse (a required
 * field dropped, an unknown field added, a field of the wrong type or out of range), and
 * `anyJson` whatever JSON at all.
 */
import fc from "fast-check";
import { z } from "zod";

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  format?: string;
};

const ascii = fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c));

/** Longest string the fuzzer builds (the schemas allow up to 100,000 characters; most tests need less). */
const MAX_STRING = 300;

export function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
}

/** Values that satisfy a JSON schema (the subset zod emits for the edge's schemas). */
export function fromJsonSchema(s: JsonSchema): fc.Arbitrary<unknown> {
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...s.enum);
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map(fromJsonSchema));
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case "string": {
      if (s.format === "uri") return fc.webUrl();
      if (s.pattern) {
        const re = new RegExp(s.pattern);
        return fc.stringMatching(re).filter((v) => v.length <= (s.maxLength ?? Infinity));
      }
      const minLength = s.minLength ?? 0;
      const maxLength = Math.max(minLength, Math.min(s.maxLength ?? MAX_STRING, MAX_STRING));
      // Printable text with some whitespace and Unicode; trimmed schemas need non-blank content.
      return fc
        .string({
          unit: fc.oneof(ascii, fc.constantFrom(" ", "\n", "\t", "é", "∑", "✓", "😀", "\u0000")),
          minLength,
          maxLength,
        })
        .filter((v) => minLength === 0 || v.trim().length >= minLength);
    }
    case "integer": {
      const min = s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : (s.minimum ?? -1e9);
      const max = s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - 1 : (s.maximum ?? 1e9);
      return fc.oneof(
        fc.constantFrom(min, max),
        fc.integer({ min: Math.max(min, -2e9), max: Math.min(max, 2e9) }),
      );
    }
    case "number":
      return fc.double({
        min: s.minimum ?? -1e9,
        max: s.maximum ?? 1e9,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array":
      return fc.array(s.items ? fromJsonSchema(s.items) : fc.jsonValue(), {
        minLength: s.minItems ?? 0,
        maxLength: Math.min(s.maxItems ?? 5, 5),
      });
    case "object": {
      const props = s.properties ?? {};
      if (Object.keys(props).length === 0)
        return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 });
      const required = new Set(s.required ?? []);
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries(props)) model[k] = fromJsonSchema(v);
      return fc.record(model, { requiredKeys: [...required] });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** Inputs the schema accepts. */
export function valid(schema: z.ZodType): fc.Arbitrary<unknown> {
  return fromJsonSchema(jsonSchemaOf(schema)).filter((v) => schema.safeParse(v).success);
}

/** Inputs just outside the schema; each is checked to be refused by the schema itself. */
export function invalid(schema: z.ZodType): fc.Arbitrary<unknown> {
  const js = jsonSchemaOf(schema);
  const props = Object.keys(js.properties ?? {});
  const base = fromJsonSchema(js) as fc.Arbitrary<Record<string, unknown>>;
  const wrongValue = fc.oneof(
    fc.constant(null),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.string({ maxLength: 5 }),
    fc.constant(""),
    fc.constant("x".repeat(200_001)),
    fc.array(fc.integer(), { maxLength: 3 }),
    fc.constant({}),
  );
  const mutations: fc.Arbitrary<unknown>[] = [
    // An unknown field (the request schemas are strict).
    fc
      .tuple(base, fc.string({ minLength: 1, maxLength: 10 }), fc.jsonValue({ maxDepth: 1 }))
      .map(([v, k, x]) => ({ ...v, [props.includes(k) ? `${k}_extra` : k]: x })),
    // Not an object at all.
    fc.oneof(fc.constant(null), fc.integer(), fc.string(), fc.array(fc.jsonValue({ maxDepth: 1 }))),
  ];
  if (props.length > 0) {
    const key = fc.constantFrom(...props);
    mutations.push(
      fc.tuple(base, key, wrongValue).map(([v, k, x]) => ({ ...v, [k]: x })),
      fc.tuple(base, fc.constantFrom(...(js.required ?? props))).map(([v, k]) => {
        const { [k]: _dropped, ...rest } = v;
        return rest;
      }),
    );
  }
  return fc.oneof(...mutations).filter((v) => !schema.safeParse(v).success);
}

/** Any JSON value, or bytes that are not JSON. */
export const anyBody: fc.Arbitrary<string> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? "null"),
  fc.string({ maxLength: 200 }),
  fc.constantFrom(
    "",
    "{",
    "[1,",
    '{"a":1}garbage',
    "\u0000\u0001",
    "null",
    '"str"',
    "1e999",
    "{}".repeat(1000),
  ),
);
