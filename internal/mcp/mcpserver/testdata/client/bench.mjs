// bench.mjs times read_file round trips of `cordon mcp` with the official
// MCP TypeScript SDK client (the client that Node-based agents use), over
// stdio, and prints the median in milliseconds as JSON. Used by
// internal/benchmcp; asserts nothing.
//
// usage: node bench.mjs CORDON_BINARY WORKSPACE FILE CALLS
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [cordon, workspace, file, callsArg] = process.argv.slice(2);
const calls = Number(callsArg);
if (!cordon || !workspace || !file || !(calls > 0)) {
  console.error("usage: node bench.mjs CORDON_BINARY WORKSPACE FILE CALLS");
  process.exit(2);
}

const transport = new StdioClientTransport({
  command: cordon,
  args: ["mcp", "--workspace", workspace],
  env: { ...process.env },
  stderr: "inherit",
});
const client = new Client({ name: "cordon-bench-client", version: "1.0.0" });
await client.connect(transport);

const times = [];
let bytes = 0;
for (let i = 0; i < calls + 10; i++) {
  const start = process.hrtime.bigint();
  const res = await client.callTool({ name: "read_file", arguments: { path: file } });
  const d = Number(process.hrtime.bigint() - start) / 1e6;
  if (res.isError || !res.content || res.content[0].type !== "text") {
    console.error("read_file failed:", JSON.stringify(res).slice(0, 300));
    process.exit(1);
  }
  bytes = res.content[0].text.length;
  if (i >= 10) times.push(d);
}
times.sort((a, b) => a - b);
console.log(JSON.stringify({ median_ms: times[Math.floor(times.length / 2)], calls, bytes }));
await client.close();
