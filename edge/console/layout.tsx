/**
 * The console's page shell: the navigation (admin pages listed for admin keys only), the sign-out
 * button and the stylesheet. Scripts are external files from `/console/assets/` (the content
 * security policy allows no inline script), loaded only by the pages that need them.
 */
import type { Child } from "hono/jsx";
import { CONSOLE_PATH } from "./session.js";

export const ASSETS = `${CONSOLE_PATH}/assets`;

const PAGES = [
  { id: "playground", label: "Playground", admin: false },
  { id: "library", label: "Library", admin: false },
  { id: "flywheel", label: "Flywheel", admin: true },
  { id: "nodes", label: "Nodes and tiers", admin: true },
  { id: "keys", label: "Keys", admin: true },
  { id: "uploads", label: "Uploads", admin: true },
] as const;

export type PageId = (typeof PAGES)[number]["id"] | "signin";

/** One console page. `admin`: the signed-in key's role (null on the sign-in page). */
export function Layout(props: {
  title: string;
  page: PageId;
  admin: boolean | null;
  scripts?: string[];
  styles?: string[];
  children?: Child;
}) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${props.title} · kvgraft console`}</title>
        <link rel="icon" href={`${ASSETS}/favicon.svg`} type="image/svg+xml" />
        <link rel="stylesheet" href={`${ASSETS}/console.css`} />
        {(props.styles ?? []).map((href) => (
          <link rel="stylesheet" href={`${ASSETS}/${href}`} />
        ))}
        {(props.scripts ?? []).map((src) => (
          <script src={`${ASSETS}/${src}`} defer />
        ))}
      </head>
      <body>
        <header>
          <span class="brand">kvgraft</span>
          {props.admin !== null && (
            <nav aria-label="Console pages">
              <ul>
                {PAGES.filter((p) => props.admin || !p.admin).map((p) => (
                  <li>
                    <a
                      href={`${CONSOLE_PATH}/${p.id}`}
                      aria-current={p.id === props.page ? "page" : undefined}
                    >
                      {p.label}
                    </a>
                  </li>
                ))}
              </ul>
            </nav>
          )}
          {props.admin !== null && (
            <form method="post" action={`${CONSOLE_PATH}/signout`} class="signout">
              <span class="role">{props.admin ? "admin key" : "public key"}</span>
              <button type="submit">Sign out</button>
            </form>
          )}
        </header>
        <main>
          <h1>{props.title}</h1>
          {props.children}
        </main>
      </body>
    </html>
  );
}

/** A term with its explanation as a tooltip (and for screen readers, the same text). */
export function Term(props: { tip: string; children?: Child }) {
  return (
    <span class="term" title={props.tip}>
      {props.children}
    </span>
  );
}

/**
 * A wide table's box: on a narrow screen it scrolls sideways instead of widening the page
 * (a focusable region, so the keyboard scrolls it too).
 */
export function Wide(props: { label: string; children?: Child }) {
  return (
    // A labelled section is a region landmark; tabindex lets the keyboard scroll it.
    <section class="wide" aria-label={props.label} tabindex={0}>
      {props.children}
    </section>
  );
}

/** An error or notice box. */
export function Notice(props: { kind: "error" | "ok"; children?: Child }) {
  return (
    <p class={`notice ${props.kind}`} role={props.kind === "error" ? "alert" : "status"}>
      {props.children}
    </p>
  );
}
