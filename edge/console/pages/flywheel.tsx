/**
 * The flywheel (admin): progress, the queue with costs and candidate answers, accept (with a
 * reference answer) and reject, and the history of finished items; an item's page lists its
 * candidates with their programs.
 */
import type { FlywheelItem } from "../../db/flywheel-queue.js";
import type { listFlywheelItems } from "../../services/flywheel-admin.service.js";
import type { Candidate } from "../../services/flywheel-judge.js";
import { Layout, Notice, Term, Wide } from "../layout.js";
import { CONSOLE_PATH } from "../session.js";

type Listing = Awaited<ReturnType<typeof listFlywheelItems>>;

/** What an item cost, in one line. */
function costText(cost: Record<string, unknown> | null): string {
  if (!cost) return "none yet";
  const n = (k: string) => Number(cost[k] ?? 0);
  const energy = cost.energyWh === null || cost.energyWh === undefined ? "" : `, ${n("energyWh")} Wh`;
  return `${n("tokensIn") + n("tokensOut")} tokens, GPU ${Math.round(n("gpuMs"))} ms${energy}`;
}

/** The item's majority answer and candidate count, as the list reports them. */
function resultText(result: Record<string, unknown> | null): string {
  if (!result) return "not solved yet";
  const answer = result.answer ?? null;
  const count = result.candidateCount ?? (Array.isArray(result.candidates) ? result.candidates.length : 0);
  return `${answer === null ? "no majority" : `majority ${String(answer)}`}, ${String(count)} candidates`;
}

export function FlywheelPage(props: { listing: Listing; message?: { kind: "ok" | "error"; text: string } }) {
  const { listing } = props;
  const p = listing.progress;
  const open = listing.items.filter((i) => i.status === "queued" || i.status === "running");
  const done = listing.items.filter((i) => i.status === "accepted" || i.status === "rejected");
  return (
    <Layout title="Flywheel" page="flywheel" admin={true}>
      {props.message && <Notice kind={props.message.kind}>{props.message.text}</Notice>}
      <p>
        The flywheel is <strong>{listing.enabled ? "on" : "off"}</strong> (KVGRAFT_FLYWHEEL={listing.setting}
        ). {p.queued} queued, {p.running} running, {p.accepted} accepted, {p.rejected} rejected; spent{" "}
        {p.tokensIn + p.tokensOut} tokens and {p.gpuMs} ms of GPU time
        {p.energyWh === null ? " (energy not measured)" : `, ${p.energyWh} Wh`}.
      </p>
      <h2>Queue</h2>
      {open.length === 0 ? (
        <p>Nothing is queued.</p>
      ) : (
        <ItemTable items={open} actions={true} label="Queued items" />
      )}
      <h2>History</h2>
      {done.length === 0 ? (
        <p>No finished items.</p>
      ) : (
        <ItemTable items={done} actions={true} label="Finished items" />
      )}
    </Layout>
  );
}

function ItemTable(props: { items: FlywheelItem[]; actions: boolean; label: string }) {
  return (
    <Wide label={props.label}>
      <table>
        <thead>
          <tr>
            <th scope="col">Problem</th>
            <th scope="col">Status</th>
            <th scope="col">
              <Term tip="Tokens and GPU time the heavier solve spent on this item so far.">Cost</Term>
            </th>
            <th scope="col">Candidates</th>
            <th scope="col">
              <Term tip="The answer an admin vouches for: the worker accepts a candidate whose program prints it.">
                Reference
              </Term>
            </th>
            <th scope="col">Updated</th>
            {props.actions && <th scope="col">Actions</th>}
          </tr>
        </thead>
        <tbody>
          {props.items.map((item) => (
            <tr data-item={item.id}>
              <td>
                <a href={`${CONSOLE_PATH}/flywheel/${item.id}`}>{item.problem}</a>
              </td>
              <td class="status">{item.status}</td>
              <td>{costText(item.cost)}</td>
              <td>{resultText(item.result)}</td>
              <td class="reference">{item.referenceAnswer ?? "none"}</td>
              <td>{item.updatedAt.toISOString()}</td>
              {props.actions && (
                <td>
                  <ItemActions item={item} />
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </Wide>
  );
}

/** Accept (a queued item needs a reference answer; a rejected one may take one) and reject. */
function ItemActions({ item }: { item: FlywheelItem }) {
  const acceptable = item.status === "queued" || item.status === "rejected";
  if (!acceptable) return <span>none</span>;
  const inputId = `reference-${item.id}`;
  return (
    <div class="actions">
      <form method="post" action={`${CONSOLE_PATH}/flywheel/${item.id}/accept`} class="row">
        <label for={inputId}>Reference answer</label>
        <input
          id={inputId}
          name="referenceAnswer"
          required={item.status === "queued"}
          maxlength={1000}
          value={item.referenceAnswer ?? ""}
        />
        <button type="submit">Accept</button>
      </form>
      {item.status === "queued" && (
        <form method="post" action={`${CONSOLE_PATH}/flywheel/${item.id}/reject`}>
          <button type="submit" class="danger">
            Reject
          </button>
        </form>
      )}
    </div>
  );
}

export function FlywheelItemPage(props: { item: FlywheelItem }) {
  const { item } = props;
  const candidates = (item.result?.candidates ?? []) as Candidate[];
  return (
    <Layout title="Flywheel item" page="flywheel" admin={true}>
      <p class="problem">{item.problem}</p>
      <dl class="facts">
        <dt>Status</dt>
        <dd>{item.status}</dd>
        <dt>Attempts</dt>
        <dd>{item.attempts}</dd>
        <dt>Cost</dt>
        <dd>{costText(item.cost)}</dd>
        <dt>Reference answer</dt>
        <dd>{item.referenceAnswer ?? "none"}</dd>
      </dl>
      <ItemActions item={item} />
      <h2>Candidates</h2>
      {candidates.length === 0 && <p>No candidates yet.</p>}
      {candidates.map((c) => (
        <section class="card" aria-label={`Candidate of seed ${c.seed}`}>
          <dl class="facts">
            <dt>Stated answer</dt>
            <dd>{c.stated ?? "none"}</dd>
            <dt>Program printed</dt>
            <dd>{c.printed ?? `nothing (${c.verdict ?? "no program"})`}</dd>
          </dl>
          {c.program && <pre>{c.program}</pre>}
        </section>
      ))}
    </Layout>
  );
}
