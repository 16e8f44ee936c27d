// client.mjs drives `cordon mcp` over stdio with the official MCP TypeScript
// SDK client: it lists the tools, calls every one of them (including three
// sandbox violations and the texts an agent reads for its mistakes), writes
// one malformed line between two calls, and prints one JSON object with the
// results.
//
// usage: node client.mjs CORDON_BINARY WORKSPACE [EXTRA_CORDON_ARGS...]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [cordon, workspace, ...extra] = process.argv.slice(2);
if (!cordon || !workspace) {
  console.error("usage: node client.mjs CORDON_BINARY WORKSPACE [ARGS...]");
  process.exit(2);
}

const transport = new StdioClientTransport({
  command: cordon,
  args: ["mcp", "--workspace", workspace, ...extra],
  env: { ...process.env },
  stderr: "inherit",
});
const client = new Client({ name: "cordon-test-client", version: "1.0.0" });
await client.connect(transport);

const out = { server: client.getServerVersion(), tools: [], calls: [] };
const listed = await client.listTools();
out.tools = listed.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));

async function call(label, name, args) {
  const res = await client.callTool({ name, arguments: args });
  const text = (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
  const r = { label, name, isError: res.isError === true, text };
  out.calls.push(r);
  return r;
}

await call("read", "read_file", { path: "a.txt" });
await call("read-outside", "read_file", { path: "../outside" });
await call("read-env", "read_file", { path: ".env" });
await call("read-big", "read_file", { path: "big.dat" });
await call("read-after-violations", "read_file", { path: "a.txt", start_line: 2, end_line: 2 });
await call("write", "write_file", { path: "new/n.txt", content: "one\ntwo\n" });
await call("edit", "edit_file", { path: "new/n.txt", old_string: "one", new_string: "ONE" });
const read = await call("read-new", "read_file", { path: "new/n.txt" });
const anchor = read.text.split("\n")[1].split("|")[0];
await call("replace", "replace_lines", { path: "new/n.txt", start_anchor: anchor, new_text: "TWO" });
await call("replace-stale", "replace_lines", { path: "new/n.txt", start_anchor: anchor, new_text: "again" });
await call("list", "list_dir", { path: "." });
await call("find", "find_files", { pattern: "**/*.txt" });
await call("grep", "grep", { pattern: "ga+mma" });
await call("info", "file_info", { path: "a.txt" });
await call("mkdir", "create_dir", { path: "made/deep" });
await call("run-argv", "run_command", { argv: ["echo", "hello; not a shell"] });
await call("run-command", "run_command", { command: "echo from-sh; exit 7" });
await call("status", "sandbox_status", {});
await call("write-protected", "write_file", { path: ".git/hooks/pre-commit", content: "evil" });
await call("write-nested-git-config", "write_file", { path: "sub/.git/config", content: "[core]\n\tfsmonitor = touch pwned\n" });
await call("still-serving", "file_info", { path: "new/n.txt" });

// What an agent reads: ranges, missing and binary files, counts, .gitignore.
await call("read-reversed", "read_file", { path: "a.txt", start_line: 9, end_line: 3 });
await call("read-missing", "read_file", { path: "missing.txt" });
await call("info-missing", "file_info", { path: "missing.txt" });
await call("read-binary", "read_file", { path: "x.bin" });
await call("grep-count", "grep", { pattern: "alpha|gamma" });
await call("find-ignoring", "find_files", { pattern: "**/*.o" });
await call("find-ignored", "find_files", { pattern: "**/*.o", include_ignored: true });
await call("run-long", "run_command", { command: "seq 1 100000; echo 'FAIL: the reason' >&2; exit 1", max_output_bytes: 3000 });

// A malformed line, written on the server's stdin between two calls: the
// server answers it with a parse error (-32700, id null) and goes on serving.
const raw = [];
transport._process.stdout.on("data", (chunk) => raw.push(chunk.toString()));
const clientErrors = [];
client.onerror = (e) => clientErrors.push(String(e));
transport._process.stdin.write("this is not JSON\n");
await call("after-malformed", "file_info", { path: "a.txt" });
out.malformedReply = raw.join("").split("\n").find((l) => l.includes("-32700")) || "";
out.clientErrors = clientErrors;

await client.close();
console.log(JSON.stringify(out));
