// The playground's own redirect URI for the flow done by hand (static/oauth_by_hand.js): hands the
// code, state and issuer back to the panel that opened this page, then says so.
const query = new URLSearchParams(location.search);
const answer = {
  type: "oauth-callback",
  code: query.get("code"),
  state: query.get("state"),
  iss: query.get("iss"),
  error: query.get("error"),
};
const told = document.querySelector("[data-callback-status]");
if (window.opener) {
  window.opener.postMessage(answer, location.origin);
  told.textContent = answer.code
    ? "The code went back to the panel. Close this tab and exchange it there."
    : `The authorization server answered ${answer.error}. Close this tab.`;
} else {
  told.textContent = "This page hands a code back to the panel that opened it, and none did.";
}
