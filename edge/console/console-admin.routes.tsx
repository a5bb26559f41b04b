/**
 * The console's admin pages and actions: flywheel, nodes and tiers, keys, uploads. Every one of them,
 * whatever the method, refuses a public key with 403 on the server (`consoleAdminOnly`), not only by
 * leaving its link out of the navigation.
 */
import { Hono } from "hono";
import { DomainError } from "../../shared/errors.js";
import type { AppEnv, Deps } from "../http.js";
import { flywheelAcceptSchema, flywheelRejectSchema } from "../ops-schemas.js";
import { keyCreateSchema } from "../schemas.js";
import {
  acceptFlywheelItem,
  getFlywheelItem,
  listFlywheelItems,
  rejectFlywheelItem,
} from "../services/flywheel-admin.service.js";
import { createApiKey, listApiKeys, revokeApiKey } from "../services/keys.service.js";
import { describeNodes } from "../services/nodes.service.js";
import { uploadConsoleRoutes } from "./console-upload.routes.js";
import { createNodeSampleRing } from "./node-samples.js";
import { FlywheelItemPage, FlywheelPage } from "./pages/flywheel.js";
import { KeysPage } from "./pages/keys.js";
import { type NodeRow, NodesPage } from "./pages/nodes.js";
import { consoleAdminOnly } from "./session.js";

type Message = { kind: "ok" | "error"; text: string };

/** A form's text fields (files are not taken here). */
async function formFields(c: { req: { parseBody(): Promise<Record<string, unknown>> } }) {
  const form = await c.req.parseBody();
  return Object.fromEntries(
    Object.entries(form).filter((e): e is [string, string] => typeof e[1] === "string"),
  );
}

/** The admin pages; mount after the console session middleware. */
export function adminConsoleRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const samples = createNodeSampleRing();
  for (const path of [
    "/flywheel",
    "/flywheel/*",
    "/nodes",
    "/nodes/*",
    "/keys",
    "/keys/*",
    "/uploads",
    "/uploads/*",
  ])
    app.use(path, consoleAdminOnly);

  const flywheelPage = async (message?: Message) => (
    <FlywheelPage listing={await listFlywheelItems(deps, { limit: 100 })} {...(message ? { message } : {})} />
  );
  app.get("/flywheel", async (c) => c.html(await flywheelPage()));
  app.get("/flywheel/:id", async (c) =>
    c.html(<FlywheelItemPage item={await getFlywheelItem(deps, c.req.param("id"))} />),
  );
  app.post("/flywheel/:id/accept", async (c) => {
    const fields = await formFields(c);
    const reference = fields.referenceAnswer?.trim();
    const input = flywheelAcceptSchema.parse(reference ? { referenceAnswer: reference } : {});
    try {
      const item = await acceptFlywheelItem(deps, c.req.param("id"), input);
      const text =
        item.status === "accepted"
          ? "Accepted: the matching candidate was deposited."
          : `Reference answer ${item.referenceAnswer} set: the worker accepts a candidate whose program prints it.`;
      return c.html(await flywheelPage({ kind: "ok", text }));
    } catch (err) {
      if (!(err instanceof DomainError) || (err.status !== 409 && err.status !== 422)) throw err;
      return c.html(await flywheelPage({ kind: "error", text: err.message }), err.status);
    }
  });
  app.post("/flywheel/:id/reject", async (c) => {
    const input = flywheelRejectSchema.parse({});
    try {
      await rejectFlywheelItem(deps, c.req.param("id"), input);
      return c.html(await flywheelPage({ kind: "ok", text: "Rejected." }));
    } catch (err) {
      if (!(err instanceof DomainError) || err.status !== 409) throw err;
      return c.html(await flywheelPage({ kind: "error", text: err.message }), 409);
    }
  });

  app.get("/nodes", async (c) => {
    const nodes: NodeRow[] = await describeNodes(deps);
    const recent = samples.record(deps.clock.now(), nodes);
    return c.html(<NodesPage nodes={nodes} samples={recent} />);
  });

  const keysPage = async (
    currentKeyId: string,
    extra: { created?: { key: string; role: string; label: string }; message?: Message } = {},
  ) => <KeysPage keys={await listApiKeys(deps.db)} currentKeyId={currentKeyId} {...extra} />;
  app.get("/keys", async (c) => c.html(await keysPage(c.get("principal").keyId)));
  app.post("/keys", async (c) => {
    const fields = await formFields(c);
    const input = keyCreateSchema.parse({
      label: fields.label ?? "",
      role: fields.role,
    });
    const created = await createApiKey(deps.db, input);
    return c.html(
      await keysPage(c.get("principal").keyId, {
        created: { key: created.key, role: input.role, label: input.label },
      }),
    );
  });
  app.post("/keys/:id/revoke", async (c) => {
    const key = await revokeApiKey(deps.db, c.req.param("id"));
    return c.html(
      await keysPage(c.get("principal").keyId, { message: { kind: "ok", text: `Revoked ${key.label}.` } }),
    );
  });
  app.route("/", uploadConsoleRoutes(deps));
  return app;
}
