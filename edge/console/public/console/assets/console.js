// The console's one script (served as a file: the content security policy runs no inline script).
// On the nodes page it draws each node's charts with uPlot from the page's JSON block of samples; on
// the uploads page it sends a block through the upload grant in chunks, with a progress bar; on the
// playground it asks through the streamed route and shows the text as it is generated.

/** Colors with at least 3:1 contrast against the white page, one per series of a chart. */
const COLORS = ["#0b5cad", "#b4400d", "#287233"];
/** Line dashes per series: the third is dashed, so a line under it (hot bytes equal to cold) shows through. */
const DASHES = [undefined, undefined, [8, 6]];

/**
 * The time axis's ticks over the hour shown, on the clock's round minutes: every ten minutes, or
 * every twenty on a chart too narrow for seven labels (a phone).
 */
function timeTicks(start, end, width) {
  const step = width < 480 ? 1200 : 600;
  const ticks = [];
  for (let t = Math.ceil(start / step) * step; t <= end; t += step) ticks.push(t);
  return ticks;
}

/** A tick's label: the local time as hours and minutes (14:30). */
function clockTime(seconds) {
  return new Date(seconds * 1000).toLocaleTimeString([], {
    hour: "2-digit",
    minute: "2-digit",
    hour12: false,
  });
}

function drawNodeCharts() {
  const block = document.getElementById("node-samples");
  if (!block || typeof uPlot !== "function") return;
  const data = JSON.parse(block.textContent);
  // The axis always spans the last hour up to this view's sample, however few samples there are.
  const start = data.end - data.windowS;
  for (const node of data.nodes) {
    const holder = document.querySelector(`.charts[data-node="${CSS.escape(node.id)}"]`);
    if (!holder) continue;
    for (const chart of node.charts) {
      const figure = document.createElement("figure");
      figure.className = "chart";
      const caption = document.createElement("figcaption");
      caption.textContent = `${chart.title} (${chart.unit}), last hour`;
      figure.append(caption);
      holder.append(figure);
      const note = (text) => {
        const p = document.createElement("p");
        p.className = "chart-note";
        p.textContent = text;
        figure.append(p);
      };
      if (chart.series.every((s) => s.values.every((v) => v === null))) {
        note("No data in the last hour.");
        continue;
      }
      if (data.times.length === 1)
        note(
          "One sample so far, this view's: a line appears from the next view on (one sample per view, at most one a second).",
        );
      const width = Math.max(260, Math.min(holder.clientWidth || 600, 900));
      new uPlot(
        {
          width,
          height: 200,
          scales: { x: { time: true, range: [start, data.end] } },
          series: [
            { value: (_u, v) => (v === null ? "" : clockTime(v)) },
            ...chart.series.map((s, i) => ({
              label: s.label,
              stroke: COLORS[i % COLORS.length],
              dash: DASHES[i % DASHES.length],
              width: 2,
              points: { show: true },
              spanGaps: true,
            })),
          ],
          axes: [
            { splits: () => timeTicks(start, data.end, width), values: (_u, ticks) => ticks.map(clockTime) },
            { label: chart.unit },
          ],
        },
        [data.times, ...chart.series.map((s) => s.values)],
        figure,
      );
    }
  }
}

/** Hex SHA-256 of bytes (Web Crypto). */
async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The JSON body of a response, or an error with the message the server gave. */
async function answer(res) {
  const text = await res.text();
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    // An HTML error page: its status says enough.
  }
  if (!res.ok) throw new Error(body?.error?.message ?? `HTTP ${res.status}`);
  return body;
}

/** The uploads page: grant, start, chunks (each with its SHA-256), commit, register. */
function setupUpload() {
  const form = document.getElementById("upload-form");
  if (!form) return;
  const status = document.getElementById("upload-status");
  const bar = document.getElementById("upload-progress");
  const say = (text) => {
    status.textContent = text;
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const problemId = form.elements.problemId.value;
    const state = form.elements.state.files[0];
    try {
      const manifest = JSON.parse(await form.elements.manifest.files[0].text());
      say("Asking for an upload grant ...");
      const grant = await answer(
        await fetch("/console/uploads/grant", {
          method: "POST",
          body: new URLSearchParams({ problemId, sha256: manifest.sha256, sizeBytes: String(state.size) }),
        }),
      );
      const headers = { "x-kvgraft-upload-grant": grant.grant };
      const started = await answer(
        await fetch("/console/uploads/imports", {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: JSON.stringify({ manifest, sizeBytes: state.size, chunkBytes: grant.chunkBytes }),
        }),
      );
      bar.max = started.chunkCount;
      bar.value = 0;
      for (let i = 0; i < started.chunkCount; i++) {
        const chunk = await state.slice(i * started.chunkBytes, (i + 1) * started.chunkBytes).arrayBuffer();
        await answer(
          await fetch(`/console/uploads/imports/${started.importId}/chunks/${i}`, {
            method: "PUT",
            headers: {
              ...headers,
              "content-type": "application/octet-stream",
              "x-kvgraft-chunk-sha256": await sha256Hex(chunk),
            },
            body: chunk,
          }),
        );
        bar.value = i + 1;
        say(`Sent chunk ${i + 1} of ${started.chunkCount}.`);
      }
      say("The GPU node is checking the file ...");
      await answer(
        await fetch(`/console/uploads/imports/${started.importId}/commit`, { method: "POST", headers }),
      );
      const registered = await answer(
        await fetch("/console/uploads/register", {
          method: "POST",
          body: new URLSearchParams({ problemId, sha256: manifest.sha256 }),
        }),
      );
      say(`Uploaded and registered block ${registered.block.sha256}.`);
    } catch (err) {
      say(`Upload failed: ${err.message}`);
    }
  });
}

/** Splits server-sent event text into complete events; returns them and the unfinished rest. */
function parseEvents(buffer) {
  const parts = buffer.split("\n\n");
  const rest = parts.pop();
  const events = parts.map((part) => {
    const lines = part.split("\n");
    const event = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? "message";
    const data = lines
      .filter((l) => l.startsWith("data: "))
      .map((l) => l.slice(6))
      .join("\n");
    return { event, data: JSON.parse(data) };
  });
  return { events, rest };
}

/** The playground's ask form: streamed, the text shown as it comes, then the answer panel. */
function setupStreamedAsk() {
  const form = document.getElementById("ask-form");
  if (!form) return;
  const section = document.getElementById("stream-section");
  const text = document.getElementById("stream-text");
  const panel = document.getElementById("answer-panel");
  const fail = (message) => {
    // A failure before any text leaves no empty "As it is generated" box behind.
    if (text.textContent === "") section.hidden = true;
    const p = document.createElement("p");
    p.className = "notice error";
    p.setAttribute("role", "alert");
    p.textContent = message;
    panel.replaceChildren(p);
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    text.textContent = "";
    section.hidden = false;
    panel.replaceChildren();
    try {
      const res = await fetch("/console/playground/stream", {
        method: "POST",
        body: new URLSearchParams(new FormData(form)),
      });
      if (!res.ok || !res.headers.get("content-type")?.startsWith("text/event-stream")) {
        await answer(res);
        throw new Error(`HTTP ${res.status}`);
      }
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const parsed = parseEvents(buffer + value);
        buffer = parsed.rest;
        for (const e of parsed.events) {
          if (e.event === "token") text.textContent += e.data.text;
          else if (e.event === "answer") panel.innerHTML = e.data.html;
          else if (e.event === "error") fail(`The solve failed: ${e.data.message}`);
        }
      }
      if (text.textContent === "") section.hidden = true;
    } catch (err) {
      fail(`The solve failed: ${err.message}`);
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  drawNodeCharts();
  setupUpload();
  setupStreamedAsk();
});
