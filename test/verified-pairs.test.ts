/**
 * Issue 35, items 1 and 2: a library answer or a transfer is `verified` only when the query is the
 * verified problem and the answer lies in the problem's domain. Every pair of
 * test/fixtures/verified-pairs.jsonl (letter case, zeros, number forms, units, negation, the asked
 * quantity, the answer's sign and domain) through a real edge and the real sandbox
 * (test/helpers/verified-pairs.ts), then the red team's cases one by one, on /v1/solve and on the
 * chat API with model `kvgraft-verified`. The held-out pairs are test/verified-pairs-heldout.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkPair, type PairsEdge, readPairs, startPairsEdge } from "./helpers/verified-pairs.js";

const pairs = readPairs("verified-pairs.jsonl");
let edge: PairsEdge;

beforeAll(async () => {
  edge = await startPairsEdge(pairs);
}, 300_000);

afterAll(async () => {
  await edge?.close();
});

describe("meaning-changing pairs (test/fixtures/verified-pairs.jsonl)", () => {
  it("has at least 30 pairs of every kind the issue names", () => {
    expect(pairs.length).toBeGreaterThanOrEqual(30);
    const kinds = new Set(pairs.map((p) => p.kind));
    for (const kind of [
      "letter_case",
      "zeros",
      "number_form",
      "unit_case",
      "negation",
      "asked_quantity",
      "answer_domain",
    ])
      expect(kinds).toContain(kind);
  });

  it.each(pairs.map((p) => [p.id, p] as const))("%s", async (_id, pair) => {
    await checkPair(edge, pair);
  });
});

const APPLES = (n: number, price: string, bill: number) =>
  `Sam buys ${n} apples at $${price} each and pays with a $${bill} bill. How much change does he get, in dollars?`;

describe("issue 35: the red team's cases", () => {
  const solve = (problem: string, mode = "auto") =>
    edge.post("/v1/solve", { problem, mode, maxTokens: 4 }).then((r) => r.body);

  it("250 cal is not the deposited 250 Cal, on /v1/solve and on the chat API (kvgraft-verified)", async () => {
    const asked = "A snack bar has 250 cal. How many kilojoules is that, rounded to the nearest kilojoule?";
    expect(await solve(asked, "verified")).toMatchObject({ verified: false, source: "none", answer: null });
    const chat = await edge.post("/v1/chat/completions", {
      model: "kvgraft-verified",
      messages: [{ role: "user", content: asked }],
    });
    expect(chat.status).toBe(200);
    expect(chat.body.kvgraft).toMatchObject({ verified: false, answer: null });
    expect(chat.body.choices[0].message.content).not.toContain("1046");
    // The deposited problem itself still answers, verified, on both.
    const same = asked.replace("250 cal", "250 Cal");
    expect(await solve(same, "verified")).toMatchObject({ verified: true, answer: "1046" });
    const sameChat = await edge.post("/v1/chat/completions", {
      model: "kvgraft-verified",
      messages: [{ role: "user", content: same }],
    });
    expect(sameChat.body.kvgraft).toMatchObject({ verified: true, answer: "1046" });
    expect(sameChat.body.choices[0].message.content).toBe("1046");
  });

  it("300 cal is no transfer of 250 Cal", async () => {
    const r = await solve(
      "A snack bar has 300 cal. How many kilojoules is that, rounded to the nearest kilojoule?",
    );
    expect(r.verified).toBe(false);
    expect(r.answer).not.toBe("1255");
  });

  it("0.05 and 0.050 are not 0.0500 (3 significant figures)", async () => {
    for (const n of ["0.05", "0.050"]) {
      const r = await solve(`How many significant figures are in ${n}?`, "verified");
      expect(r).toMatchObject({ verified: false, answer: null });
    }
  });

  it("abc is not Abc", async () => {
    const r = await solve("Let Abc = 2 and abc = 7. What is abc + 1?", "verified");
    expect(r).toMatchObject({ verified: false, answer: null });
  });

  it.each([
    [APPLES(12, "0.75", 5), "-4"],
    [APPLES(30, "0.75", 20), "-2.5"],
    [
      "A jacket costs $80. It is discounted by 125%, and then a sales tax of 8% is added to the discounted price. What is the final price in dollars?",
      "-21.6",
    ],
  ])("%j is refused as a transfer (it computes %s)", async (problem, computed) => {
    const r = await solve(problem, "library");
    expect(r).toMatchObject({ verified: false, transferRefused: { code: "answer_out_of_domain" } });
    expect(r.transferRefused.message).toMatch(/sign|negative/);
    expect(r.answer).not.toBe(computed);
  });
});
