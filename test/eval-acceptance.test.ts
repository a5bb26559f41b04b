/**
 * `kvgraft eval acceptance` (tools/eval/acceptance-eval.ts): its counts from the flywheel's
 * outcomes, and the command on the embedded model with one problem (the real worker, edge and
 * GPU node on loopback), JSON last; usage errors exit 2.
 */
import { describe, expect, it } from "vitest";
import { type AcceptanceCase, countCases } from "../tools/eval/acceptance-eval.js";
import { runCli } from "./helpers/cli.js";

const item = (over: Partial<AcceptanceCase>): AcceptanceCase => ({
  condition: "heldOutFamily",
  family: "f",
  problem: "p",
  expected: "204",
  status: "rejected",
  reason: "no_agreement",
  judged: null,
  right: null,
  ...over,
});

describe("kvgraft eval acceptance", () => {
  it("counts what the judge accepted, what was deposited and what the check turned away", () => {
    const { total, byCondition } = countCases([
      item({}),
      item({ status: "accepted", reason: null, judged: "204", right: true }),
      item({ status: "accepted", reason: null, judged: "2", right: false, condition: "freshPhrasing" }),
      item({ reason: "programs_disagree_elsewhere", judged: "2", right: false }),
      item({ reason: "agreement_untested", judged: "204", right: true }),
      // Accepted by the judge, refused by the deposit's own checks: not the nearby-numbers check.
      item({ reason: "program_mismatch", judged: "2", right: false }),
    ]);
    expect(total).toEqual({
      items: 6,
      judgeAccepted: 5,
      judgeWrong: 3,
      deposited: 2,
      depositedWrong: 1,
      checkRejectedRight: 1,
      checkRejectedWrong: 1,
    });
    expect(byCondition.freshPhrasing).toMatchObject({ items: 1, deposited: 1, depositedWrong: 1 });
    expect(byCondition.heldOutFamily).toMatchObject({ items: 5, judgeAccepted: 4, deposited: 1 });
  });

  it("runs the flywheel on one problem and prints the JSON result last", () => {
    const r = runCli(["eval", "acceptance", "--limit", "1", "--json"], {}, 300_000);
    expect(r.status, r.stderr).toBe(0);
    const json = r.json as { total: { items: number }; cases: AcceptanceCase[]; model: { sha256: string } };
    expect(json.total.items).toBe(1);
    expect(json.cases).toHaveLength(1);
    expect(json.cases[0]?.condition).toBe("freshPhrasing");
    expect(json.model.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(r.stderr).toContain("1/1");
  }, 300_000);

  it("refuses bad flags with a usage error", () => {
    const r = runCli(["eval", "acceptance", "--limit", "0"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--limit must be an integer >= 1");
    const c = runCli(["eval", "acceptance", "--condition", "trainedPhrasing"]);
    expect(c.status).toBe(2);
    expect(c.stderr).toContain("--condition must be one of freshPhrasing, heldOutFamily");
    const missing = runCli(["eval", "acceptance", "--problems", "/nonexistent/problems.jsonl"]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain("cannot read --problems /nonexistent/problems.jsonl: ENOENT");
  });
});
