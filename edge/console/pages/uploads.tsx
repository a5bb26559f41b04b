/**
 * Uploads (admin): a prebuilt block (its state file and manifest) for a library problem, sent in
 * chunks through the signed upload grant with a progress bar; the page's script (console.js) does
 * the steps, and the status line says each one.
 */
import { Layout } from "../layout.js";

export function UploadsPage(props: { problems: { id: string; problem: string }[] }) {
  return (
    <Layout title="Upload a block" page="uploads" admin={true} scripts={["console.js"]}>
      <p>
        Upload a block built elsewhere (with the same model and engine fingerprints as the GPU node): the edge
        issues a short-lived upload grant for this one block, the file goes to the node in chunks (each
        checked by its SHA-256), the node checks the whole file and its probe, and the edge registers the
        block for the problem.
      </p>
      <form id="upload-form" class="stack">
        <label for="upload-problem">Problem</label>
        <select id="upload-problem" name="problemId" required>
          {props.problems.map((p) => (
            <option value={p.id}>{p.problem}</option>
          ))}
        </select>
        <label for="upload-manifest">Manifest (JSON)</label>
        <input id="upload-manifest" name="manifest" type="file" accept="application/json,.json" required />
        <label for="upload-state">Block state file</label>
        <input id="upload-state" name="state" type="file" required />
        <button type="submit">Upload</button>
      </form>
      <label for="upload-progress">Progress</label>
      <progress id="upload-progress" max={1} value={0} />
      <p id="upload-status" role="status">
        Nothing uploaded yet.
      </p>
    </Layout>
  );
}
