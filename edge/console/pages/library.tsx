/**
 * The library: search and browse verified problems; a problem's page shows its solutions (worked
 * text, program, answer, parametric status), its blocks (manifest fields, size, tokens, state),
 * how often queries were routed to it and, for admin keys, which nodes hold each block in which tier.
 */
import type { BlockPlacement } from "../../cluster/gpu-pool.js";
import type { LibraryItem, LibraryPage } from "../../db/library-pages.js";
import { Layout, Term, Wide } from "../layout.js";
import { CONSOLE_PATH } from "../session.js";

export function LibraryListPage(props: { admin: boolean; q: string; page: LibraryPage }) {
  const next = props.page.nextCursor;
  const nextQuery = new URLSearchParams({
    ...(props.q ? { q: props.q } : {}),
    ...(next ? { cursor: next } : {}),
  });
  return (
    <Layout title="Library" page="library" admin={props.admin}>
      <search>
        <form method="get" action={`${CONSOLE_PATH}/library`} class="row">
          <label for="q">Search problems</label>
          <input id="q" name="q" type="search" value={props.q} placeholder="words or numbers" />
          <button type="submit">Search</button>
        </form>
      </search>
      {props.page.items.length === 0 ? (
        <p>No problems{props.q ? " match this search" : " yet"}.</p>
      ) : (
        <Wide label="Verified problems">
          <table>
            <caption>Verified problems, oldest first</caption>
            <thead>
              <tr>
                <th scope="col">Problem</th>
                <th scope="col">Answer</th>
                <th scope="col">
                  <Term tip="Parametric: the program reads the problem's numbers, so it can be re-run on new ones (transfer).">
                    Program
                  </Term>
                </th>
                <th scope="col">Block tokens</th>
              </tr>
            </thead>
            <tbody>
              {props.page.items.map((item) => (
                <tr>
                  <td>
                    <a href={`${CONSOLE_PATH}/library/${item.id}`}>{item.problem}</a>
                  </td>
                  <td>{item.answer ?? "none"}</td>
                  <td>
                    {item.solution
                      ? `v${item.solution.version}, ${item.solution.parametric ? "parametric" : "constant"}`
                      : "none"}
                  </td>
                  <td>{item.block ? `${item.block.tokenCount} (${item.block.state})` : "no ready block"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Wide>
      )}
      {next && <a href={`${CONSOLE_PATH}/library?${nextQuery}`}>Next page</a>}
    </Layout>
  );
}

export interface LibraryItemView {
  item: LibraryItem;
  hits: Record<string, number>;
  /** Per block, where it lives (admin keys with a node pool only). */
  placements: Map<string, BlockPlacement> | null;
}

export function LibraryItemPage(props: { admin: boolean; view: LibraryItemView }) {
  const { item, hits, placements } = props.view;
  const hitText = Object.entries(hits)
    .map(([source, n]) => `${n} ${source}`)
    .join(", ");
  return (
    <Layout title="Library problem" page="library" admin={props.admin}>
      <p class="problem">{item.problem.normalizedText}</p>
      <dl class="facts">
        <dt>
          <Term tip="Queries routed to this problem, by how they were answered.">Hits</Term>
        </dt>
        <dd id="hits">{hitText || "none yet"}</dd>
        <dt>
          <Term tip="The problem with its numbers replaced by placeholders: problems of one template share a program.">
            Template
          </Term>
        </dt>
        <dd>{item.problem.template}</dd>
      </dl>
      <h2>Solutions</h2>
      {item.solutions.map((s) => (
        <section class="card" aria-label={`Solution version ${s.version}`}>
          <h3>
            Version {s.version}
            {s.supersededAt ? ` (superseded ${s.supersededAt.toISOString()})` : " (current)"}
          </h3>
          <dl class="facts">
            <dt>Answer</dt>
            <dd class="answer-text">{s.answer}</dd>
            <dt>
              <Term tip="Parametric: the program reads the problem's numbers and can be re-run on new ones (transfer). Constant: it answers this exact problem only.">
                Parametric
              </Term>
            </dt>
            <dd>{s.parametric ? "yes" : "no"}</dd>
            <dt>Verified</dt>
            <dd>{s.verified ? "yes" : "no"}</dd>
          </dl>
          <h4>Worked solution</h4>
          <p class="prose">{s.worked}</p>
          {s.program && (
            <>
              <h4>Program</h4>
              <pre>{s.program}</pre>
            </>
          )}
        </section>
      ))}
      <h2>Blocks</h2>
      {item.blocks.length === 0 && <p>No block.</p>}
      {item.blocks.map((b) => {
        const placement = placements?.get(b.sha256);
        const size = (b.manifest as { sizeBytes?: number }).sizeBytes;
        return (
          <section class="card" aria-label={`Block ${b.sha256.slice(0, 12)}`}>
            <dl class="facts">
              <dt>SHA-256</dt>
              <dd class="hash">{b.sha256}</dd>
              <dt>State</dt>
              <dd>{b.state}</dd>
              <dt>Tokens</dt>
              <dd>{b.tokenCount}</dd>
              <dt>Size</dt>
              <dd>{size === undefined ? "unknown" : `${size} bytes`}</dd>
              <dt>
                <Term tip="SHA-256 of the model file the block was computed with: it only grafts into this model.">
                  Model
                </Term>
              </dt>
              <dd class="hash">{b.modelFingerprint}</dd>
              <dt>
                <Term tip="The engine fingerprint (llama.cpp build, KV types, context settings) the block needs.">
                  Engine
                </Term>
              </dt>
              <dd class="hash">{b.engineFingerprint}</dd>
              {placement && (
                <>
                  <dt>
                    <Term tip="GPU nodes holding the block and the tier it is in there (hot: in a slot, warm: RAM, cold: disk).">
                      Held by
                    </Term>
                  </dt>
                  <dd>
                    {placement.holders.length === 0
                      ? "no node"
                      : placement.holders
                          .map((h) => `${h.nodeId} (${h.tier ?? "unknown tier"}${h.live ? "" : ", down"})`)
                          .join(", ")}
                  </dd>
                </>
              )}
            </dl>
          </section>
        );
      })}
    </Layout>
  );
}
