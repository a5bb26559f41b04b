// The console's one script (served as a file: the content security policy runs no inline script).
// On the nodes page it draws each node's charts with uPlot from the page's JSON block of samples.

/** Colors with at least 3:1 contrast against the white page, one per series of a chart. */
const COLORS = ["#0b5cad", "#b4400d", "#287233"];

function drawNodeCharts() {
  const block = document.getElementById("node-samples");
  if (!block || typeof uPlot !== "function") return;
  const data = JSON.parse(block.textContent);
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
      if (chart.series.every((s) => s.values.every((v) => v === null))) {
        const empty = document.createElement("p");
        empty.textContent = "No data in the last hour.";
        figure.append(empty);
        continue;
      }
      const width = Math.max(280, Math.min(holder.clientWidth || 600, 900));
      new uPlot(
        {
          width,
          height: 200,
          series: [
            {},
            ...chart.series.map((s, i) => ({
              label: s.label,
              stroke: COLORS[i % COLORS.length],
              width: 2,
              points: { show: true },
              spanGaps: true,
            })),
          ],
          axes: [{}, { label: chart.unit }],
        },
        [data.times, ...chart.series.map((s) => s.values)],
        figure,
      );
    }
  }
}

document.addEventListener("DOMContentLoaded", drawNodeCharts);
