// The exported page's Memory tab: the served tab's pool slider, step and budget, drawn by app/web/tabs/memory.js from every
// pool size's JSON computed at export time (app/memory/data.py, packed by app/export/page.py). The address keeps
// ?blocks= and ?budget= as the served page's does.
import { D, tabs } from "./export_host.js";
import { inflate } from "./export_pack.js";
import { memoryModesHtml } from "../tabs/memory.js";

const M = D.memory_tab, root = document.getElementById("bv-memory-tab");
if (M && root) {
  const pools = inflate(M.pools);  // every pool size's view, the slider's range in order
  const cur = { blocks: M.default_blocks, step: 0, budget: M.default_budget };
  const el = (tag, attrs = {}, text = "") => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text) node.textContent = text;
    return node;
  };
  const range = (label, name, min, max) => {
    const input = el("input", { type: "range", name, min, max, step: 1, "aria-label": label });
    const out = el("output", { "data-value": name });
    return { input, out, box: el("label", { class: "bv-range" }) };
  };
  const pool = range("KV pool (blocks of 4 tokens)", "blocks", M.min_blocks, M.max_blocks);
  const step = range("Step", "memory-step", 0, 1);
  pool.box.append(el("span", { class: "bv-range-label" }, "KV pool (blocks of 4 tokens) "), pool.out, pool.input);
  step.box.append(el("span", { class: "bv-range-label" }, "Step "), step.out, step.input);
  const back = el("button", { type: "button", title: "The previous pass" }, "◂ Back");
  const forward = el("button", { type: "button", title: "The next pass" }, "Step ▸");
  const controls = el("div", { class: "bv-choices bv-mem-controls" });
  controls.append(pool.box, step.box, back, forward);
  const lesson = el("div", { class: "bv-mem-lesson" }), modes = el("div", { class: "bv-mem-modes" });
  const budgets = el("div", { class: "bv-choices", role: "group", "aria-label": "Token budget per pass" });
  const chunked = el("div", { class: "bv-mem-chunked" });
  root.querySelector("[data-part=controls]").append(controls);
  root.querySelector("[data-part=lesson]").append(lesson);
  root.querySelector("[data-part=modes]").append(modes);
  root.querySelector("[data-part=budgets]").append(budgets);
  root.querySelector("[data-part=chunked]").append(chunked);
  const budgetButtons = M.budgets.map((b) => {
    const button = el("button", { type: "button", "data-budget": String(b) }, b.toLocaleString("en-US"));
    button.addEventListener("click", () => { cur.budget = b; drawBudget(); tabs.changed(); });
    budgets.append(button);
    return button;
  });

  let data = null;
  async function draw() {
    const all = await pools;
    data = all[cur.blocks - M.min_blocks];
    cur.step = Math.max(0, Math.min(cur.step, data.width - 1));
    pool.input.value = String(cur.blocks); pool.out.textContent = String(cur.blocks);
    step.input.max = String(data.width - 1);
    step.input.value = String(cur.step); step.out.textContent = String(cur.step);
    lesson.innerHTML = data.lesson;
    modes.innerHTML = memoryModesHtml(data, cur.step);
    root.dataset.blocks = String(cur.blocks);
    root.dataset.step = String(cur.step);
  }
  function drawBudget() {
    chunked.innerHTML = M.chunked[String(cur.budget)];
    for (const b of budgetButtons) b.setAttribute("aria-pressed", String(Number(b.dataset.budget) === cur.budget));
  }
  pool.input.addEventListener("input", () => { cur.blocks = Number(pool.input.value); draw(); tabs.changed(); });
  step.input.addEventListener("input", () => { cur.step = Number(step.input.value); draw(); tabs.changed(); });
  back.addEventListener("click", () => { cur.step = Math.max(0, cur.step - 1); draw(); tabs.changed(); });
  forward.addEventListener("click", () => {
    cur.step = Math.min((data?.width ?? 1) - 1, cur.step + 1); draw(); tabs.changed();
  });

  // The page's links and address (app/web/export/export_host.js): ?blocks= and ?budget=, refused and named as served.
  tabs.memory = {
    keys: ["blocks", "budget"],
    apply(q, messages) {
      Object.assign(cur, { blocks: M.default_blocks, step: 0, budget: M.default_budget });
      const value = (key) => q.getAll(key).at(-1).trim();
      if (q.has("blocks")) {
        const text = value("blocks"), n = /^\s*[0-9]{1,18}\s*$/.test(text) ? Number(text) : null;
        if (n === null) {
          messages.push(`URL: blocks='${text.slice(0, 40)}' is not a whole number (allowed ${M.min_blocks}..` +
            `${M.max_blocks}); kept ${cur.blocks}.`);
        } else {
          const clamped = Math.min(Math.max(n, M.min_blocks), M.max_blocks);
          if (clamped !== n) {
            messages.push(`URL: blocks=${n} is out of range ${M.min_blocks}..${M.max_blocks}; using ${clamped}.`);
          }
          cur.blocks = clamped;
        }
      }
      if (q.has("budget")) {
        const text = value("budget");
        if (M.budgets.map(String).includes(text)) cur.budget = Number(text);
        else messages.push(`URL: budget='${text.slice(0, 40)}' is not allowed (use ${M.budgets.join(", ")}); kept ` +
          `${cur.budget}.`);
      }
      draw();
      drawBudget();
    },
    query(q) {
      if (cur.blocks !== M.default_blocks) q.set("blocks", String(cur.blocks));
      if (cur.budget !== M.default_budget) q.set("budget", String(cur.budget));
    },
    state: cur,
  };
  drawBudget();
  draw();
}
