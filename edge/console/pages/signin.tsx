/** The sign-in page: the API key is posted in the form body, never put in a URL. */
import { Layout, Notice } from "../layout.js";
import { CONSOLE_PATH } from "../session.js";

export function SignInPage(props: { error?: string }) {
  return (
    <Layout title="Sign in" page="signin" admin={null}>
      <p>
        Sign in with an API key. A public key opens the playground and the library; an admin key also opens
        the flywheel, the nodes and tiers, the keys and the uploads pages. The key is kept in a cookie that
        only this console reads.
      </p>
      {props.error && <Notice kind="error">{props.error}</Notice>}
      <form method="post" action={`${CONSOLE_PATH}/signin`} class="stack">
        <label for="key">API key</label>
        <input
          id="key"
          name="key"
          type="password"
          autocomplete="current-password"
          required
          placeholder="kvg_..."
          spellcheck={false}
        />
        <button type="submit">Sign in</button>
      </form>
    </Layout>
  );
}
