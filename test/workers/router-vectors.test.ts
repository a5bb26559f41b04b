/**
 * The router's concept-vector table inside workerd (the Workers runtime): the bundled base64 table
 * decodes there (`atob`) to the same cosines as in Node (test/router-soft-match.test.ts), so the
 * edge's soft concept overlap is the one `kvgraft eval router` measures.
 */
import { describe, expect, it } from "vitest";
import { conceptSimilarity } from "../../edge/routing/concept-vectors.js";
import { softDice } from "../../edge/routing/soft-match.js";

describe("concept vectors in workerd", () => {
  it("decode to the cosines measured in Node", () => {
    expect(conceptSimilarity("kid", "children")).toBeCloseTo(0.757, 3);
    expect(conceptSimilarity("list", "sequence")).toBeCloseTo(0.54, 2);
    expect(conceptSimilarity("kid", "qqqzzz")).toBe(0);
    const { pairs } = softDice(new Set(["kid", "ticket"]), new Set(["children", "ticket"]), 0.45);
    expect(pairs.map((p) => `${p.from}~${p.to}`)).toEqual(["kid~children"]);
  });
});
