// The conformance suite's client sends no credentials, and `warrant mcp --listen` answers 401 to
// a request without an API key. This proxy stands between them: every request to it is sent on
// to the gateway unchanged but for `Authorization: Bearer $WARRANT_MCP_KEY` and the `Host` of
// the gateway, and every answer (SSE streams included) comes back as it arrives.
//
// Usage: WARRANT_MCP_KEY=KEY node bearer_proxy.mjs GATEWAY_URL
// Prints the proxy's own URL (same path as GATEWAY_URL) on its first line.

import http from "node:http";

const target = new URL(process.argv[2]);
const key = process.env.WARRANT_MCP_KEY;
if (!key) {
  console.error("bearer_proxy: WARRANT_MCP_KEY is not set");
  process.exit(2);
}

const proxy = http.createServer((request, response) => {
  const headers = { ...request.headers, host: target.host, authorization: `Bearer ${key}` };
  const options = { host: target.hostname, port: target.port, method: request.method, path: request.url, headers };
  const onward = http.request(options, (answer) => {
    response.writeHead(answer.statusCode, answer.headers);
    answer.pipe(response);
  });
  onward.on("error", (error) => {
    if (!response.headersSent) response.writeHead(502, { "content-type": "text/plain" });
    response.end(`bearer_proxy: ${error.message}`);
  });
  response.on("close", () => onward.destroy());
  request.pipe(onward);
});

proxy.listen(0, "127.0.0.1", () => {
  console.log(`http://127.0.0.1:${proxy.address().port}${target.pathname}`);
});
