/**
 * The playground: ask a problem, see where the answer came from (library, transfer, graft or the
 * model), whether it is verified, what it cost and its hashes, each explained in a tooltip.
 * Library problems are offered as examples to ask with one click. With script the ask streams: the
 * text appears as the GPU node generates it, then the answer panel (console.js).
 */
import type { SolveResponse } from "../../schemas.js";
import { Layout, Notice, Term } from "../layout.js";
import { CONSOLE_PATH } from "../session.js";

const SOURCE_TIPS: Record<SolveResponse["source"], string> = {
  library: "The verified answer stored for this exact problem: no GPU call, 0 GPU tokens.",
  transfer:
    "A verified program of a problem with the same wording, re-run in the sandbox on this problem's numbers.",
  graft: "The model answered with the routed library block's KV cache grafted in (its prefill skipped).",
  model: "The plain model answered; nothing from the library was used.",
  none: "No answer: no library entry fits and the mode forbids the plain model.",
};

const TIPS = {
  verified:
    "True only for the verified answer of this exact problem, or a verified program re-run on numbers of the kind, sign and role it was verified with.",
  confidence: "1 for verified library answers; empty where the edge has no calibrated estimate.",
  route:
    "The router's decision: answer (same problem), template (same wording, new numbers), similar, abstain.",
  score: "1 for an exact fingerprint or template match; else the best candidate's score in [0, 1].",
  reason: "Why the router decided as it did.",
  block: "SHA-256 of the library block grafted (or that would be), if any.",
  gpuTokens: "Tokens the GPU node read (in) and generated (out) for this answer.",
  gpuMs: "Time spent on the GPU node.",
  edgeMs: "Time spent at the edge, from request to answer.",
  energy:
    "GPU energy of the model's sampled solve, measured on the GPU node: nvidia-smi power draw sampled every 100 ms over this request's GPU work, integrated over time. Other work on the GPU in that window is included. Not measured for library answers, transfers and grafts, or on a node without nvidia-smi.",
  problemFingerprint:
    "SHA-256 of the normalized problem: the same problem in any formatting has the same one.",
  answerSha256: "SHA-256 of the answer text.",
  outputSha256: "SHA-256 of the GPU node's output tokens.",
  blockSha256: "SHA-256 of the block state file that was grafted.",
  queued: "Whether the problem was queued for the flywheel (an unverified answer, with the flywheel on).",
} as const;

const MODES = [
  ["auto", "auto: library, transfer or graft, then the model"],
  ["library", "library: never the plain model"],
  ["verified", "verified: only a verified library answer"],
] as const;

export interface PlaygroundProps {
  admin: boolean;
  examples: string[];
  problem?: string;
  /** The solve mode asked with (kept selected). */
  mode?: string;
  result?: SolveResponse;
  error?: string;
}

export function PlaygroundPage(props: PlaygroundProps) {
  return (
    <Layout title="Playground" page="playground" admin={props.admin} scripts={["console.js"]}>
      <form method="post" action={`${CONSOLE_PATH}/playground`} class="stack" id="ask-form">
        <label for="problem">Problem</label>
        <textarea id="problem" name="problem" rows={4} required maxlength={20000}>
          {props.problem ?? ""}
        </textarea>
        <div class="row">
          <label for="mode">Mode</label>
          <select id="mode" name="mode">
            {MODES.map(([value, label]) => (
              <option value={value} selected={value === (props.mode ?? "auto")}>
                {label}
              </option>
            ))}
          </select>
          <button type="submit" id="ask">
            Ask
          </button>
        </div>
      </form>
      {props.error && <Notice kind="error">{props.error}</Notice>}
      {/* Filled by console.js as the answer streams in (a page without script posts the form instead). */}
      <section id="stream-section" aria-labelledby="stream-title" hidden>
        <h2 id="stream-title">As it is generated</h2>
        <pre id="stream-text" aria-live="polite" />
      </section>
      <div id="answer-panel">{props.result && <Answer result={props.result} />}</div>
      <section aria-labelledby="examples-title">
        <h2 id="examples-title">Examples from the library</h2>
        {props.examples.length === 0 ? (
          <p>The library is empty.</p>
        ) : (
          <form method="post" action={`${CONSOLE_PATH}/playground`} class="examples">
            <ul>
              {props.examples.map((problem) => (
                <li>
                  <button type="submit" name="problem" value={problem} class="link">
                    {problem}
                  </button>
                </li>
              ))}
            </ul>
          </form>
        )}
      </section>
    </Layout>
  );
}

/** The energy figure as text: joules and watt-hours, mean power and samples; "not measured" when null. */
function energyText(energy: SolveResponse["cost"]["energy"]): string {
  if (energy === null) return "not measured";
  const plural = energy.samples === 1 ? "" : "s";
  return (
    `${energy.joules.toFixed(1)} J (${energy.wh.toPrecision(3)} Wh), mean ${energy.meanWatts.toFixed(0)} W ` +
    `over ${energy.samples} sample${plural} ${energy.intervalMs} ms apart`
  );
}

/** The answer panel (also rendered alone, as the last event of a streamed ask). */
export function Answer({ result }: { result: SolveResponse }) {
  const r = result;
  return (
    <section aria-labelledby="answer-title" class="answer" data-source={r.source}>
      <h2 id="answer-title">Answer</h2>
      <p class="answer-text" id="answer">
        {r.answer ?? "(no answer)"}
      </p>
      <dl class="facts">
        <dt>
          <Term tip={SOURCE_TIPS[r.source]}>Source</Term>
        </dt>
        <dd id="source">{r.source}</dd>
        <dt>
          <Term tip={TIPS.verified}>Verified</Term>
        </dt>
        <dd id="verified">
          {r.verified ? "yes" : "no"}
          {r.verification && ` (${r.verification.method}: ${r.verification.note})`}
        </dd>
        <dt>
          <Term tip={TIPS.confidence}>Confidence</Term>
        </dt>
        <dd>{r.confidence === null ? "n/a" : r.confidence.toFixed(2)}</dd>
        <dt>
          <Term tip={TIPS.route}>Route</Term>
        </dt>
        <dd>
          {r.route.decision}, <Term tip={TIPS.reason}>{r.route.reason}</Term>
          {r.route.score !== null && (
            <>
              {", "}
              <Term tip={TIPS.score}>score {r.route.score.toFixed(3)}</Term>
            </>
          )}
        </dd>
        <dt>
          <Term tip={TIPS.block}>Block</Term>
        </dt>
        <dd class="hash">{r.route.blockId ?? "none"}</dd>
        <dt>
          <Term tip={TIPS.gpuTokens}>GPU tokens</Term>
        </dt>
        <dd id="gpu-tokens">{r.cost.gpuTokensIn + r.cost.gpuTokensOut}</dd>
        <dt>
          <Term tip={`${TIPS.gpuMs} ${TIPS.edgeMs}`}>Time</Term>
        </dt>
        <dd>
          GPU {r.cost.gpuMs.toFixed(1)} ms, edge {r.cost.edgeMs.toFixed(1)} ms
        </dd>
        <dt>
          <Term tip={TIPS.energy}>Energy</Term>
        </dt>
        <dd id="energy">{energyText(r.cost.energy)}</dd>
        <dt>
          <Term tip={TIPS.queued}>Flywheel</Term>
        </dt>
        <dd>{r.queued ? "queued for a heavier solve" : "not queued"}</dd>
      </dl>
      {r.transferRefused && <Notice kind="error">Transfer refused: {r.transferRefused.message}</Notice>}
      {r.text !== null && (
        <details>
          <summary>Generated text</summary>
          <pre>{r.text}</pre>
        </details>
      )}
      <details>
        <summary>Hashes</summary>
        <dl class="facts">
          {(Object.keys(r.hashes) as (keyof SolveResponse["hashes"])[]).map((k) => (
            <>
              <dt>
                <Term tip={TIPS[k]}>{k}</Term>
              </dt>
              <dd class="hash">{r.hashes[k] ?? "none"}</dd>
            </>
          ))}
        </dl>
      </details>
    </section>
  );
}
