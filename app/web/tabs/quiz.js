// The quiz ("Check yourself"): app/quiz/view.py's six questions one at a time, each answer scored and explained, with
// a link to the view it is about. The one implementation: the served Quiz tab runs it on Panel's model
// (tabs/quiz_host.js), the exported page offline (export/export_host.js); tests/oracles/quiz_view.py is its oracle.

const QUIZ_ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;" };
const quizEscape = (s) => String(s).replace(/[&<>"']/g, (c) => QUIZ_ESC[c]);

/** Return how many of `answers` (an option index per question, null when unanswered) are right. */
export function quizScore(questions, answers) {
  return questions.reduce((n, q, k) => n + (answers[k] === q.answer ? 1 : 0), 0);
}

/** Return where the learner is and the score so far over the questions answered (data-score, data-answered). */
export function progressHtml(questions, current, answers) {
  const done = answers.filter((a) => a !== null).length, total = quizScore(questions, answers);
  const where = current < questions.length ? `Question ${current + 1} of ${questions.length}` : "Your result";
  return `<p class="bv-quiz-progress">${where} &middot; <span class="bv-score" data-score="${total}" ` +
    `data-answered="${done}">Score: ${total} / ${done}</span></p>`;
}

/** Return the verdict on one checked answer, the right option and why (data-verdict: right or wrong). */
export function verdictHtml(q, answer) {
  const verdict = answer === q.answer ? "right" : "wrong";
  const words = verdict === "right" ? "Right." : "Not quite.";
  return `<div class="bv-verdict" data-question="${q.key}" data-verdict="${verdict}"><p><b>${words}</b> ` +
    `The answer: ${quizEscape(q.options[q.answer])}</p><p>${quizEscape(q.why)}</p></div>`;
}

/** Return the final score and one line per question, numbered once by the list itself. */
export function summaryHtml(questions, answers) {
  const words = { right: "Right.", wrong: "Not quite.", unanswered: "Not answered." };
  const items = questions.map((q, k) => {
    const a = answers[k], verdict = a === null ? "unanswered" : a === q.answer ? "right" : "wrong";
    return `<li data-question="${q.key}" data-verdict="${verdict}"><b>${words[verdict]}</b> ${quizEscape(q.text)}</li>`;
  }).join("");
  const total = quizScore(questions, answers);
  return `<div class="bv-quiz-result"><p class="bv-score" data-final-score="${total}">You scored ${total} of ` +
    `${questions.length}.</p><ol class="bv-quiz-feedback">${items}</ol>` +
    "<p>Go back to any question to reread its explanation and open the view it points to.</p></div>";
}

function button(text, cls, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  if (cls) b.className = cls;
  b.addEventListener("click", onClick);
  return b;
}

/** Return an option index per question from `saved` (a host's copy), null where none or out of range. */
function options(questions, saved) {
  return questions.map((q, k) => {
    const a = saved?.[k];
    return Number.isInteger(a) && a >= 0 && a < q.options.length ? a : null;
  });
}

/**
 * Mount the quiz in `root`: `data` is {intro, questions} from app/quiz/view.py quiz_data; `follow(link)` opens a
 * question's view (a query string of the app) in place. `keep` (optional): `state`, where a host saved the learner's
 * place and answers ({current, checked, chosen}), and `save(state)`, told after each change. The first checked
 * answer is the one scored.
 */
export function mountQuiz(root, data, follow, keep = {}) {
  const questions = data.questions, saved = keep.state ?? {};
  const at = Number.isInteger(saved.current) ? Math.max(0, Math.min(saved.current, questions.length)) : 0;
  const state = { current: at, checked: options(questions, saved.checked), chosen: options(questions, saved.chosen) };
  const save = () => keep.save?.(state);
  root.classList.add("bv-quiz");
  root.innerHTML = data.intro;
  const body = document.createElement("div");
  body.className = "bv-quiz-body";
  root.appendChild(body);

  function show(focus) {
    const n = state.current;
    body.replaceChildren();
    const progress = document.createElement("div");
    progress.innerHTML = progressHtml(questions, n, state.checked);
    body.appendChild(progress);
    const back = button("Previous question", "", () => { state.current = Math.max(n - 1, 0); save(); show(true); });
    back.hidden = n === 0;
    if (n === questions.length) {
      const result = document.createElement("div");
      result.innerHTML = summaryHtml(questions, state.checked);
      result.tabIndex = -1;  // the wrappers take the focus: the markup inside stays the oracle's
      body.append(result, back);
      if (focus) result.focus();
      return;
    }
    const q = questions[n], answer = state.checked[n];
    const group = document.createElement("div");
    group.setAttribute("role", "radiogroup");
    const stem = document.createElement("div");
    stem.id = `bv-quiz-q-${q.key}`;
    stem.tabIndex = -1;
    stem.innerHTML = `<p class="bv-question" data-question="${q.key}"><b>${quizEscape(q.text)}</b></p>`;
    group.setAttribute("aria-labelledby", stem.id);
    group.className = "bv-quiz-options";
    q.options.forEach((text, k) => {
      const label = document.createElement("label");
      const input = document.createElement("input");
      input.type = "radio";
      input.name = `bv-quiz-${q.key}`;
      input.value = String(k);
      input.checked = (answer ?? state.chosen[n]) === k;
      input.disabled = answer !== null;  // the first checked answer is the one scored
      input.addEventListener("change", () => { state.chosen[n] = k; save(); });
      const span = document.createElement("span");
      span.textContent = text;
      label.append(input, span);
      group.appendChild(label);
    });
    body.append(stem, group);
    if (answer === null) {
      const check = button("Check my answer", "bv-primary", () => {
        if (state.chosen[n] === null) return;  // nothing chosen yet: nothing to check
        state.checked[n] = state.chosen[n];
        save();
        show(false);
        body.querySelector("[data-part=verdict]").focus();
      });
      body.appendChild(check);
    } else {
      const verdict = document.createElement("div");
      verdict.dataset.part = "verdict";
      verdict.tabIndex = -1;
      verdict.innerHTML = verdictHtml(q, answer);
      const link = button(`Show me: ${q.link_text}`, "bv-quiz-link", () => follow(q.link));
      body.append(verdict, link);
    }
    const next = button(n + 1 < questions.length ? "Next question" : "See your result", "bv-primary", () => {
      state.current = n + 1;
      save();
      show(true);
    });
    const nav = document.createElement("div");
    nav.className = "bv-quiz-nav";
    nav.append(back, next);
    body.appendChild(nav);
    if (focus) stem.focus();
  }

  show(false);
  return { state, show };
}
