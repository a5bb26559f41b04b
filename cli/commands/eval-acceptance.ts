/** `kvgraft eval acceptance`: what the flywheel deposits unchecked, and how much is wrong (tools/eval/acceptance-eval.ts). */
import { z } from "zod";
import {
  ACCEPTANCE_CONDITIONS,
  type AcceptanceCondition,
  runAcceptanceEval,
} from "../../tools/eval/acceptance-eval.js";
import { intFlag, UsageError } from "../args.js";
import { command, modelOrEmbedded } from "../command.js";
import { inheritedEnv } from "../config.js";
import { readJsonl } from "../jsonl.js";

const HELP = `usage: kvgraft eval acceptance [--model F.gguf] [--per-family N] [--seed S]
                               [--condition freshPhrasing|heldOutFamily] [--problems F.jsonl]
                               [--limit L] [--json]

Starts a GPU node (default the embedded model) and an edge in-process on loopback with a fresh
libSQL file and an empty library, then queues new instances (numbers from --seed, default
"acceptance") of the trained families on their second held-out phrasings (2 x N a family) and of
the held-out families (N a family; default N 1; --condition keeps one of the two), or the lines
{problem, answer} of --problems (answer: the right one; condition "given"), one at a time with no reference answer, and
runs the flywheel worker on each. Counts what the agreement rule alone would have accepted
and what was deposited with its check on nearby numbers, and how much of each is wrong
(the generator's answer). --limit runs only the first L problems. Progress on stderr.
Exit 1 when any deposited answer is wrong.
JSON (last line): {total: {items, judgeAccepted, judgeWrong, deposited, depositedWrong,
checkRejectedRight, checkRejectedWrong}, byCondition, model, settings, wallS, cases}.`;

function conditionFlag(value: string): AcceptanceCondition {
  const known = ACCEPTANCE_CONDITIONS.find((c) => c === value);
  if (!known)
    throw new UsageError(`--condition must be one of ${ACCEPTANCE_CONDITIONS.join(", ")}, got ${value}`);
  return known;
}

const problemLine = z.object({ problem: z.string().min(1), answer: z.string().min(1) }).strict();

/** The problems of --problems, each line checked (a mistake names its line). */
async function readProblems(path: string): Promise<{ problem: string; answer: string }[]> {
  const problems = await readJsonl(path, problemLine, `--problems ${path}`);
  if (problems.length === 0) throw new UsageError(`--problems ${path} has no problems`);
  return problems;
}

/** `kvgraft eval acceptance`. */
export default command(
  {
    help: HELP,
    flags: {
      model: { type: "string" },
      "per-family": { type: "string" },
      seed: { type: "string" },
      condition: { type: "string" },
      problems: { type: "string" },
      limit: { type: "string" },
    },
  },
  async (flags, out) => {
    const r = await runAcceptanceEval({
      modelPath: modelOrEmbedded(flags.model),
      perFamily: intFlag(flags["per-family"], "per-family", 1),
      seed: flags.seed ?? "acceptance",
      ...(flags.condition === undefined ? {} : { conditions: [conditionFlag(flags.condition)] }),
      ...(flags.problems === undefined ? {} : { problems: await readProblems(flags.problems) }),
      ...(flags.limit === undefined ? {} : { limit: intFlag(flags.limit, "limit", 1) }),
      log: out.progress,
      gpuEnv: inheritedEnv(),
    });
    const t = r.total;
    out.say(
      `${t.items} problems: the agreement rule alone accepted ${t.judgeAccepted} (${t.judgeWrong} wrong); ` +
        `deposited with the nearby-numbers check ${t.deposited} (${t.depositedWrong} wrong); ` +
        `the check turned away ${t.checkRejectedWrong} wrong and ${t.checkRejectedRight} right; ${r.wallS} s`,
    );
    out.result(r);
    return t.depositedWrong === 0 ? 0 : 1;
  },
);
