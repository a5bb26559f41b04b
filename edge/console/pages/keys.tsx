/** Keys (admin): create a key (its plaintext shown once, on this response only) and revoke keys. */
import type { ApiKeyInfo } from "../../services/keys.service.js";
import { Layout, Notice, Wide } from "../layout.js";
import { CONSOLE_PATH } from "../session.js";

export function KeysPage(props: {
  keys: ApiKeyInfo[];
  currentKeyId: string;
  created?: { key: string; role: string; label: string };
  message?: { kind: "ok" | "error"; text: string };
}) {
  return (
    <Layout title="Keys" page="keys" admin={true}>
      {props.message && <Notice kind={props.message.kind}>{props.message.text}</Notice>}
      {props.created && (
        <section class="card created" aria-labelledby="created-title">
          <h2 id="created-title">New {props.created.role} key</h2>
          <p>Copy it now: only its hash is stored, and it is not shown again ({props.created.label}).</p>
          <p>
            <code id="created-key">{props.created.key}</code>
          </p>
        </section>
      )}
      <h2>Create a key</h2>
      <form method="post" action={`${CONSOLE_PATH}/keys`} class="row">
        <label for="label">Label</label>
        <input id="label" name="label" required maxlength={200} />
        <label for="role">Role</label>
        <select id="role" name="role">
          <option value="public">public (playground, library, /v1)</option>
          <option value="admin">admin (everything)</option>
        </select>
        <button type="submit">Create</button>
      </form>
      <h2>Keys</h2>
      <Wide label="Keys">
        <table>
          <thead>
            <tr>
              <th scope="col">Label</th>
              <th scope="col">Prefix</th>
              <th scope="col">Role</th>
              <th scope="col">Created</th>
              <th scope="col">Revoked</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {props.keys.map((k) => (
              <tr>
                <td>{k.label}</td>
                <td>
                  <code>kvg_{k.prefix}_…</code>
                </td>
                <td>{k.role}</td>
                <td>{k.createdAt.toISOString()}</td>
                <td>{k.revokedAt ? k.revokedAt.toISOString() : "no"}</td>
                <td>
                  {k.revokedAt === null && k.id !== props.currentKeyId ? (
                    <form method="post" action={`${CONSOLE_PATH}/keys/${k.id}/revoke`}>
                      <button type="submit" class="danger" aria-label={`Revoke ${k.label}`}>
                        Revoke
                      </button>
                    </form>
                  ) : (
                    <span>{k.id === props.currentKeyId ? "this session's key" : "none"}</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Wide>
    </Layout>
  );
}
