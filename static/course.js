// Course pages: arrow keys move between steps; quizzes are answered in place (the form works without this).

const typing = (el) => el && (el.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName));

document.addEventListener("keydown", (event) => {
  if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey || typing(document.activeElement)) return;
  const rel = { ArrowLeft: "prev", ArrowRight: "next" }[event.key];
  const link = rel && document.querySelector(`link[rel="${rel}"]`);
  if (link) {
    event.preventDefault();
    window.location.href = link.href;
  }
});

for (const form of document.querySelectorAll("form.quiz[data-api]")) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const feedback = form.querySelector(".quiz-feedback");
    const choices = [...form.querySelectorAll('input[name="choice"]:checked')].map((input) => input.value);
    const button = form.querySelector('button[type="submit"]');
    button.disabled = true;
    try {
      const reply = await fetch(form.dataset.api, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ choices }),
      });
      const body = await reply.json();
      if (reply.ok) {
        feedback.innerHTML = body.html; // rendered by our own server from the lesson file
      } else {
        feedback.textContent = body.error ? body.error.message : "The answer could not be checked.";
      }
    } catch {
      form.submit(); // the network failed: fall back to the plain form post
    } finally {
      button.disabled = false;
    }
  });
}
