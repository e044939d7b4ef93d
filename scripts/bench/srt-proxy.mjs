// Starts only the network proxy of Anthropic's sandbox-runtime (srt), in
// process from its dist modules and wired the way srt's sandbox manager
// wires it (HTTP proxy and SOCKS behind one mux port, a domain allow-list
// filter, the resolved-address guard on every direct dial), listening on
// 127.0.0.1. It prints "http://127.0.0.1:PORT" and runs until stdin closes
// or SIGTERM.
//
// Usage: node scripts/bench/srt-proxy.mjs ALLOW[,ALLOW...] [NAME=ADDR,...]
//   ALLOW   srt allowedDomains entries ("bench.test", "127.0.0.1")
//   NAME=ADDR  static answers for the guard's resolver (no DNS for test names)
// srt is found in $SRT_DIR, else in `npm root -g`.
import { execFileSync } from 'node:child_process';
import { lookup as dnsLookup } from 'node:dns';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

function srtDir() {
  if (process.env.SRT_DIR) return process.env.SRT_DIR;
  const root = execFileSync('npm', ['root', '-g'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  return join(root, '@anthropic-ai', 'sandbox-runtime');
}

const dir = srtDir();
if (!existsSync(join(dir, 'dist', 'sandbox', 'http-proxy.js'))) {
  console.error(`srt-proxy: no sandbox-runtime in ${dir} (npm i -g @anthropic-ai/sandbox-runtime@0.0.83, or set SRT_DIR)`);
  process.exit(1);
}
const mod = p => import(pathToFileURL(join(dir, 'dist', 'sandbox', p)).href);
const { createHttpProxyServer } = await mod('http-proxy.js');
const { createSocksProxyServer } = await mod('socks-proxy.js');
const { createMuxProxyServer } = await mod('mux-proxy.js');
const { matchesDomainPatternWithPort } = await mod('domain-pattern.js');
const { createResolvedAddressGuard } = await mod('resolved-address-guard.js');

const allowed = (process.argv[2] ?? '').split(',').filter(Boolean);
const hosts = new Map((process.argv[3] ?? '').split(',').filter(Boolean).map(kv => kv.split('=')));
if (allowed.length === 0) {
  console.error('usage: srt-proxy.mjs ALLOW[,ALLOW...] [NAME=ADDR,...]');
  process.exit(2);
}

// The same resolver seam srt's guard has; test names get static answers.
const resolve = (hostname, options, cb) => {
  const a = hosts.get(hostname);
  if (a === undefined) return dnsLookup(hostname, options, cb);
  cb(null, [{ address: a, family: a.includes(':') ? 6 : 4 }]);
};
const guard = createResolvedAddressGuard({ allowedDomains: allowed, resolve });
// srt's filterNetworkRequest with a strict allow-list and no deny-list.
const filter = async (port, host) => allowed.some(p => matchesDomainPatternWithPort(host, port, p));

const httpServer = createHttpProxyServer({ filter, lookupFor: port => guard.lookupFor(port) });
const socks = createSocksProxyServer({ filter, lookupFor: port => guard.lookupFor(port) });
const mux = createMuxProxyServer({ httpServer, handleSocksConnection: s => socks.handleConnection(s) });
await mux.listenHttpBackend();
await new Promise((res, rej) => {
  mux.server.once('error', rej);
  mux.server.listen(0, '127.0.0.1', res);
});
process.stdout.write(`http://127.0.0.1:${mux.getPort()}\n`);

const stop = async () => {
  await mux.close?.();
  process.exit(0);
};
process.stdin.on('end', stop);
process.stdin.resume();
process.once('SIGTERM', stop);
