/** A console error page: what went wrong, in the words of the error, with its status. */
import { Layout, Notice } from "../layout.js";
import { CONSOLE_PATH } from "../session.js";

export function ErrorPage(props: { status: number; code: string; message: string; admin: boolean | null }) {
  const title =
    props.status === 403 ? "Admins only" : props.status === 404 ? "Not found" : "Something went wrong";
  return (
    <Layout title={title} page="signin" admin={props.admin}>
      <Notice kind="error">
        {props.message} ({props.code}, HTTP {props.status})
      </Notice>
      <p>
        <a href={`${CONSOLE_PATH}/playground`}>Back to the playground</a>
      </p>
    </Layout>
  );
}
