// A form with data-confirm asks before it is sent (destructive actions: a reset, a deletion).
document.addEventListener("submit", (event) => {
  const question = event.target instanceof HTMLFormElement ? event.target.dataset.confirm : undefined;
  if (question && !window.confirm(question)) event.preventDefault();
});
