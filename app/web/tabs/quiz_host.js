// The served Quiz tab (app/quiz/view.py's Quiz): tabs/quiz.js, the exported page's own quiz, mounted on Panel's model.
// The learner's place and answers are kept on the model (and so on the server): a view drawn again, the tab left for
// another and opened again, resumes where it was. A "Show me" link goes to the server, which opens its view in place.
import { mountQuiz } from "./quiz.js";

export function render({ model, el }) {
  const root = document.createElement("div");
  el.append(root);
  const keep = {
    state: { current: model.current, checked: model.checked, chosen: model.chosen },
    // New arrays: Panel sends a list property to the server when it is assigned, not when it is changed in place.
    save: (s) => {
      if (model.current !== s.current) model.current = s.current;
      model.checked = [...s.checked];
      model.chosen = [...s.chosen];
    },
  };
  mountQuiz(root, model.data, (link) => model.send_msg({ follow: link }), keep);
}
