// Node 20's fetch (undici) and https module ignore HTTPS_PROXY: they resolve
// the name themselves and connect straight to it, which the sandbox's
// transparent path turns into a judged proxy connection. Trust comes from
// NODE_EXTRA_CA_CERTS. usage: node node_client.js fetch|https URL
const [mode, url] = process.argv.slice(2);

function done(status, body) {
  console.log(status, body);
  process.exit(status >= 200 && status < 300 ? 0 : 1);
}

if (mode === "fetch") {
  fetch(url)
    .then((r) => r.text().then((t) => done(r.status, t)))
    .catch((e) => { console.log(String(e), e.cause ? String(e.cause) : ""); process.exit(2); });
} else {
  require("https")
    .get(url, (r) => {
      let body = "";
      r.on("data", (d) => (body += d));
      r.on("end", () => done(r.statusCode, body));
    })
    .on("error", (e) => { console.log(String(e)); process.exit(2); });
}
