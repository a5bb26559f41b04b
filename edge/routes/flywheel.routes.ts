/** The flywheel's admin API under `/admin/flywheel` (admin auth is mounted on `/admin/*`). */
import { Hono } from "hono";
import { z } from "zod";
import { flywheelStatuses } from "../db/schema.js";
import { type AppEnv, type Deps, readJson, readQuery } from "../http.js";
import {
  acceptFlywheelItem,
  enqueueProblem,
  getFlywheelItem,
  listFlywheelItems,
  rejectFlywheelItem,
} from "../services/flywheel-admin.service.js";

const answer = z.string().trim().min(1).max(1000);

const listQuerySchema = z
  .object({
    status: z.enum(flywheelStatuses).optional(),
    limit: z.coerce.number().int().min(1).max(500).default(100),
  })
  .strict();
const enqueueSchema = z
  .object({ problem: z.string().trim().min(1).max(20_000), referenceAnswer: answer.optional() })
  .strict();
const acceptSchema = z.object({ referenceAnswer: answer.optional() }).strict();
const rejectSchema = z.object({ note: z.string().max(1000).optional() }).strict();

/** A JSON body that may be empty (`{}`). */
async function optionalJson<S extends z.ZodType>(c: Parameters<typeof readJson>[0], schema: S) {
  if ((await c.req.raw.clone().text()).trim() === "") return schema.parse({}) as z.output<S>;
  return readJson(c, schema);
}

export function flywheelRoutes(deps: Deps): Hono<AppEnv> {
  return new Hono<AppEnv>()
    .get("/", async (c) => c.json(await listFlywheelItems(deps, readQuery(c, listQuerySchema)), 200))
    .post("/", async (c) => {
      const { item, created } = await enqueueProblem(deps, await readJson(c, enqueueSchema));
      return c.json({ item, created }, created ? 201 : 200);
    })
    .get("/:id", async (c) => c.json({ item: await getFlywheelItem(deps, c.req.param("id")) }, 200))
    .post("/:id/accept", async (c) => {
      const input = await optionalJson(c, acceptSchema);
      return c.json({ item: await acceptFlywheelItem(deps, c.req.param("id"), input) }, 200);
    })
    .post("/:id/reject", async (c) => {
      const input = await optionalJson(c, rejectSchema);
      return c.json({ item: await rejectFlywheelItem(deps, c.req.param("id"), input) }, 200);
    });
}
