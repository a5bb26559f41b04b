/**
 * A libSQL server for the workerd tests, run in Node by their global setup: the Worker's
 * `@libsql/client/web` speaks the Hrana v2 protocol over HTTP (`POST /v2/pipeline`, JSON), and no
 * libSQL server binary (sqld) can be installed on this machine, so this serves that protocol's
 * part the client uses (execute, batch with step conditions, sequence, close) over a real libSQL
 * database file opened with `@libsql/client`. Only the transport is ours: every statement runs in
 * libSQL. Not used in production: the deployed Worker talks to Turso.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type Client, createClient, type InValue, type ResultSet } from "@libsql/client";

type HranaValue =
  | { type: "null" }
  | { type: "integer"; value: string }
  | { type: "float"; value: number }
  | { type: "text"; value: string }
  | { type: "blob"; base64: string };

interface HranaStmt {
  sql?: string;
  args?: HranaValue[];
  named_args?: { name: string; value: HranaValue }[];
  want_rows?: boolean;
}

type HranaCond =
  | { type: "ok"; step: number }
  | { type: "error"; step: number }
  | { type: "not"; cond: HranaCond }
  | { type: "and"; conds: HranaCond[] }
  | { type: "or"; conds: HranaCond[] };

type HranaRequest =
  | { type: "execute"; stmt: HranaStmt }
  | { type: "batch"; batch: { steps: { condition?: HranaCond | null; stmt: HranaStmt }[] } }
  | { type: "sequence"; sql: string }
  | { type: "close" };

function fromHrana(v: HranaValue): InValue {
  switch (v.type) {
    case "null":
      return null;
    case "integer":
      return BigInt(v.value);
    case "float":
      return v.value;
    case "text":
      return v.value;
    case "blob":
      return Buffer.from(v.base64, "base64");
  }
}

function toHrana(v: unknown): HranaValue {
  if (v === null || v === undefined) return { type: "null" };
  if (typeof v === "bigint") return { type: "integer", value: v.toString() };
  if (typeof v === "number") return { type: "float", value: v };
  if (typeof v === "string") return { type: "text", value: v };
  return { type: "blob", base64: Buffer.from(v as ArrayBuffer).toString("base64") };
}

function stmtResult(rs: ResultSet) {
  return {
    cols: rs.columns.map((name, i) => ({ name, decltype: rs.columnTypes[i] || null })),
    rows: rs.rows.map((row) => rs.columns.map((_, i) => toHrana(row[i]))),
    affected_row_count: rs.rowsAffected,
    last_insert_rowid: rs.lastInsertRowid === undefined ? null : rs.lastInsertRowid.toString(),
  };
}

async function execute(db: Client, stmt: HranaStmt) {
  const args: InValue[] | Record<string, InValue> = stmt.named_args?.length
    ? Object.fromEntries(stmt.named_args.map((a) => [a.name.replace(/^[:@$]/, ""), fromHrana(a.value)]))
    : (stmt.args ?? []).map(fromHrana);
  return stmtResult(await db.execute({ sql: stmt.sql ?? "", args }));
}

function holds(cond: HranaCond, outcome: ("ok" | "error" | null)[]): boolean {
  switch (cond.type) {
    case "ok":
      return outcome[cond.step] === "ok";
    case "error":
      return outcome[cond.step] === "error";
    case "not":
      return !holds(cond.cond, outcome);
    case "and":
      return cond.conds.every((c) => holds(c, outcome));
    case "or":
      return cond.conds.some((c) => holds(c, outcome));
  }
}

const errorOf = (err: unknown) => ({ message: err instanceof Error ? err.message : String(err) });

async function answer(db: Client, req: HranaRequest): Promise<unknown> {
  if (req.type === "close") return { type: "close" };
  if (req.type === "execute") return { type: "execute", result: await execute(db, req.stmt) };
  if (req.type === "sequence") {
    await db.executeMultiple(req.sql);
    return { type: "sequence" };
  }
  const outcome: ("ok" | "error" | null)[] = [];
  const stepResults: unknown[] = [];
  const stepErrors: unknown[] = [];
  for (const step of req.batch.steps) {
    let result: unknown = null;
    let error: unknown = null;
    if (!step.condition || holds(step.condition, outcome)) {
      try {
        result = await execute(db, step.stmt);
      } catch (err) {
        error = errorOf(err);
      }
    }
    outcome.push(result ? "ok" : error ? "error" : null);
    stepResults.push(result);
    stepErrors.push(error);
  }
  return { type: "batch", result: { step_results: stepResults, step_errors: stepErrors } };
}

/** A running server: its base URL (the Worker's LIBSQL_URL) and how to stop it. */
export interface LibsqlHttpServer {
  url: string;
  close(): Promise<void>;
}

/** Serves the libSQL database at `fileUrl` (`file:...`) over Hrana v2 on 127.0.0.1. */
export async function startLibsqlHttp(fileUrl: string): Promise<LibsqlHttpServer> {
  const db = createClient({ url: fileUrl, intMode: "bigint" });
  // One pipeline at a time: a batch's BEGIN..COMMIT must not interleave with another request's.
  let queue: Promise<unknown> = Promise.resolve();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v2/pipeline") {
        res.writeHead(404).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { requests: HranaRequest[] };
      const run = queue.then(async () => {
        const results: unknown[] = [];
        for (const r of body.requests) {
          try {
            results.push({ type: "ok", response: await answer(db, r) });
          } catch (err) {
            results.push({ type: "error", error: errorOf(err) });
          }
        }
        return results;
      });
      queue = run.catch(() => undefined);
      void run.then((results) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ baton: null, base_url: null, results }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          db.close();
          resolve();
        });
      }),
  };
}
