/**
 * Child of test/http-get.test.ts: GETs `url` twice with BulkHttpClient (a process of its own, so
 * that NODE_EXTRA_CA_CERTS can make the test's certificate trusted) and prints one JSON line:
 * each body's SHA-256 and length.
 */
import { createHash } from "node:crypto";
import { BulkHttpClient } from "../../gpu-node/blocks/bucket/http/http-get.js";

const url = new URL(process.argv[2] ?? "");
const client = new BulkHttpClient();
const bodies = [];
for (let i = 0; i < 2; i++) {
  const res = await client.get(url, new Headers(), new AbortController().signal);
  const hash = createHash("sha256");
  let bytes = 0;
  await res.consume((view) => {
    hash.update(view);
    bytes += view.length;
  });
  bodies.push({ status: res.status, sha256: hash.digest("hex"), bytes });
}
client.close();
console.log(JSON.stringify(bodies));
