// Benchmark client for the official TypeScript MCP SDK (@modelcontextprotocol/sdk, pinned in
// package.json / package-lock.json), speaking stdio to bench/server.py (StdioClientTransport)
// or Streamable HTTP to bench/http_server.py (StreamableHTTPClientTransport, node's fetch).
// One process measures:
//   import_s        time of the dynamic imports of the SDK's client and transport modules
//   handshake_s     median time of client.connect(): spawn the server (stdio) or connect
//                   (HTTP) + initialize + initialized
//   sequential_per_s  echo calls per second, one at a time (after --warmup calls)
//   inflight_per_s  echo calls per second with --inflight concurrent callers
//   small_rss_mib   this process's peak resident set (VmHWM) after those two phases, MiB
//   big_per_s       echo calls per second carrying a --big-bytes text, one at a time
//   cpu_s_per_1k    this process's CPU seconds (user + system) per 1000 sequential calls
//   peak_rss_mib    this process's peak resident set (VmHWM) at the end, MiB
// and prints them as one line of JSON on stdout (anything else goes to stderr).
//
//   npm ci --prefix bench/node
//   node bench/node/client.mjs --server-json '["python","bench/server.py"]' \
//       --calls N --big-calls M --big-bytes B --handshakes H [--inflight 64] [--warmup 200]
//   node bench/node/client.mjs --transport http --url http://127.0.0.1:PORT/mcp ...

import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

function options() {
  const { values } = parseArgs({
    options: {
      'server-json': { type: 'string' },
      transport: { type: 'string', default: 'stdio' },
      url: { type: 'string', default: '' },
      calls: { type: 'string' },
      'big-calls': { type: 'string' },
      'big-bytes': { type: 'string' },
      handshakes: { type: 'string' },
      inflight: { type: 'string', default: '64' },
      warmup: { type: 'string', default: '200' },
    },
    strict: true,
  });
  const int = (name, min) => {
    const raw = values[name];
    if (raw === undefined) throw new Error(`--${name} is required`);
    if (!/^\d+$/.test(raw) || Number(raw) < min) throw new Error(`--${name} must be an integer >= ${min}`);
    return Number(raw);
  };
  const transport = values.transport;
  if (transport !== 'stdio' && transport !== 'http') throw new Error('--transport must be stdio or http');
  let server = [];
  if (transport === 'http') {
    if (!values.url) throw new Error('--url is required with --transport http');
  } else {
    if (values['server-json'] === undefined) throw new Error('--server-json is required');
    server = JSON.parse(values['server-json']);
    if (!Array.isArray(server) || server.length === 0 || !server.every((s) => typeof s === 'string')) {
      throw new Error('--server-json must be a non-empty JSON array of strings');
    }
  }
  return {
    transport,
    url: values.url,
    command: server[0],
    args: server.slice(1),
    calls: int('calls', 1),
    bigCalls: int('big-calls', 1),
    bigBytes: int('big-bytes', 0),
    handshakes: int('handshakes', 1),
    inflight: int('inflight', 1),
    warmup: int('warmup', 0),
  };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

function peakRssMib() {
  const match = /^VmHWM:\s+(\d+)\s+kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
  if (!match) throw new Error('no VmHWM in /proc/self/status');
  return Number(match[1]) / 1024;
}

async function echo(client, text, check) {
  const result = await client.callTool({ name: 'echo', arguments: { text } });
  const block = result.content?.[0];
  if (block?.type !== 'text' || !check(block.text)) {
    throw new Error(`unexpected echo answer: ${JSON.stringify(result).slice(0, 200)}`);
  }
}

async function main() {
  const opt = options();
  const out = {};

  // a. import
  let t0 = performance.now();
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  let newTransport;
  if (opt.transport === 'http') {
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    newTransport = () => new StreamableHTTPClientTransport(new URL(opt.url));
  } else {
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    newTransport = () => new StdioClientTransport({ command: opt.command, args: opt.args, stderr: 'inherit' });
  }
  out.import_s = (performance.now() - t0) / 1000;

  // b. handshakes: keep the last connection, close the others
  const times = [];
  let client;
  for (let i = 0; i < opt.handshakes; i++) {
    const c = new Client({ name: 'bench', version: '1.0.0' });
    const transport = newTransport();
    t0 = performance.now();
    await c.connect(transport);
    times.push((performance.now() - t0) / 1000);
    if (i < opt.handshakes - 1) await c.close();
    else client = c;
  }
  out.handshake_s = median(times);

  try {
    const isHello = (t) => t === 'hello';

    // c. warm-up
    for (let i = 0; i < opt.warmup; i++) await echo(client, 'hello', isHello);

    // d. sequential
    const cpu0 = process.cpuUsage();
    t0 = performance.now();
    for (let i = 0; i < opt.calls; i++) await echo(client, 'hello', isHello);
    const wall = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    out.sequential_per_s = opt.calls / wall;
    const cpuSeconds = (cpu.user + cpu.system) / 1e6;

    // e. in flight: the first N % W workers take one call more
    const base = Math.floor(opt.calls / opt.inflight);
    const extra = opt.calls % opt.inflight;
    const worker = async (n) => {
      for (let i = 0; i < n; i++) await echo(client, 'hello', isHello);
    };
    t0 = performance.now();
    await Promise.all(Array.from({ length: opt.inflight }, (_, w) => worker(base + (w < extra ? 1 : 0))));
    out.inflight_per_s = opt.calls / ((performance.now() - t0) / 1000);
    out.small_rss_mib = peakRssMib();

    // f. big
    const big = 'x'.repeat(opt.bigBytes);
    const isBig = (t) => typeof t === 'string' && t.length === opt.bigBytes;
    t0 = performance.now();
    for (let i = 0; i < opt.bigCalls; i++) await echo(client, big, isBig);
    out.big_per_s = opt.bigCalls / ((performance.now() - t0) / 1000);

    out.cpu_s_per_1k = (cpuSeconds / opt.calls) * 1000;
    out.peak_rss_mib = peakRssMib();
  } finally {
    await client.close();
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().then(
  () => {
    process.exitCode = 0;
  },
  (err) => {
    process.stderr.write(`client.mjs: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
