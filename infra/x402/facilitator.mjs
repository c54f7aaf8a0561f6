// A local x402 v2 facilitator built from @x402/core's x402Facilitator with the exact scheme of
// @x402/evm (EIP-3009 transferWithAuthorization), settling on the anvil chain at --rpc with anvil
// account 0, and/or of @x402/svm (an SPL token transfer it co-signs as fee payer and submits),
// settling on the local Solana node at --svm-rpc (svm-node.mjs). It serves POST /verify, POST
// /settle and GET /supported on 127.0.0.1 only.
//
//   node facilitator.mjs [--rpc http://127.0.0.1:8545] [--svm-rpc http://127.0.0.1:8899] [--port 0] [--key 0x...]
//
// With --port 0 (the default) the kernel picks a free port. Once listening it prints one JSON line
// {"url":"http://127.0.0.1:<port>","address":"0x..","network":"eip155:8453","networks":[...]} on
// stdout (address and network only with --rpc); every log line goes to stderr. SIGTERM closes it.
//
// Bodies: /verify and /settle take {"x402Version":2,"paymentPayload":...,"paymentRequirements":...}
// and answer the library's VerifyResponse / SettleResponse with 200 (or with failureStatus, below,
// when the payment is invalid or the settlement failed). A request the library throws on (say, an
// unsupported network) is answered like an invalid payment: {"isValid":false,"invalidReason":...}
// or {"success":false,"errorReason":...} with 400. Unparseable JSON gets 400 {"error":...}.
//
// Test controls (for server tests of slow and odd facilitators, never part of x402):
//   POST /_test/config {"delayMs":N,"failureStatus":S} — delay every /verify and /settle answer
//   by N ms; answer invalid verifies and failed settles with HTTP status S instead of 200 (a
//   facilitator may send a valid body with a non-2xx status, and clients must still parse it).
//   GET /_test/config returns the current values.
import http from 'node:http';
import { createWalletClient, http as viemHttp, nonceManager, publicActions } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { x402Facilitator } from '@x402/core/facilitator';
import { toFacilitatorEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/facilitator';
import { createKeyPairSignerFromPrivateKeyBytes } from '@solana/kit';
import { toFacilitatorSvmSigner } from '@x402/svm';
import { ExactSvmScheme } from '@x402/svm/exact/facilitator';
import { ACCOUNTS, NETWORK, SOLANA_NETWORK, SVM_KEYS, localBase, log, parseArgs } from './common.mjs';

const opts = parseArgs(process.argv.slice(2));
const rpc = opts.rpc || process.env.RPC_URL;
const svmRPC = opts['svm-rpc'];
if (!rpc && !svmRPC) {
  console.error('usage: node facilitator.mjs [--rpc <anvil RPC URL>] [--svm-rpc <svm-node.mjs RPC URL>] [--port <port, 0 = any>] [--key <settling key>]');
  process.exit(2);
}
const port = Number(opts.port ?? process.env.FACILITATOR_PORT ?? 0);
const key = opts.key || process.env.FACILITATOR_KEY || ACCOUNTS.facilitator.key;

// maxBody bounds a request body; x402 payloads are a few KB.
const maxBody = 1 << 20;

const facilitator = new x402Facilitator();
let account;
if (rpc) {
  // The nonce manager hands out transaction nonces locally, so concurrent settles from the one
  // settling account never race for the same nonce.
  account = privateKeyToAccount(key, { nonceManager });
  // Anvil mines each transaction at once; poll receipts often instead of viem's 4 s default.
  const wallet = createWalletClient({ account, chain: localBase(rpc), transport: viemHttp(rpc), pollingInterval: 50 }).extend(publicActions);
  const signer = toFacilitatorEvmSigner({
    address: account.address,
    getCode: (a) => wallet.getCode(a),
    readContract: (a) => wallet.readContract({ ...a, args: a.args || [] }),
    verifyTypedData: (a) => wallet.verifyTypedData(a),
    writeContract: (a) => wallet.writeContract({ ...a, args: a.args || [] }),
    sendTransaction: (a) => wallet.sendTransaction(a),
    waitForTransactionReceipt: (a) => wallet.waitForTransactionReceipt(a),
  }, { confirmationTimeoutMs: 20_000 });
  facilitator.register(NETWORK, new ExactEvmScheme(signer));
}
if (svmRPC) {
  // The fee payer co-signs each payment transaction and pays its fees; /supported names it in
  // extra.feePayer, which the server copies into its Solana requirements.
  const feePayer = await createKeyPairSignerFromPrivateKeyBytes(Buffer.from(SVM_KEYS.facilitator, 'hex'));
  facilitator.register(SOLANA_NETWORK, new ExactSvmScheme(toFacilitatorSvmSigner(feePayer, { defaultRpcUrl: svmRPC })));
}

const control = { delayMs: 0, failureStatus: 200 };

function send(res, status, obj) {
  const body = JSON.stringify(obj);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function readJSON(req) {
  let size = 0;
  const chunks = [];
  for await (const ch of req) {
    size += ch.length;
    if (size > maxBody) throw new SyntaxError(`body over ${maxBody} bytes`);
    chunks.push(ch);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

// handlePayment runs /verify or /settle. The library answers a bad payment with a result (not a
// throw); it throws for requests it cannot route (unknown version, scheme or network), which a
// real facilitator reports as an invalid request, so those become 400 with a result-shaped body.
async function handlePayment(kind, req, res) {
  let body;
  try {
    body = await readJSON(req);
  } catch (e) {
    return send(res, 400, { error: `invalid JSON body: ${e.message}` });
  }
  const { paymentPayload, paymentRequirements } = body || {};
  if (!paymentPayload || !paymentRequirements) {
    return send(res, 400, { error: 'body needs paymentPayload and paymentRequirements' });
  }
  if (control.delayMs > 0) await new Promise((r) => setTimeout(r, control.delayMs));
  const network = paymentRequirements.network;
  try {
    if (kind === 'verify') {
      const out = await facilitator.verify(paymentPayload, paymentRequirements);
      log(`verify ${network} -> ${out.isValid ? 'valid' : `invalid: ${out.invalidReason}`}`);
      return send(res, out.isValid ? 200 : control.failureStatus, out);
    }
    const out = await facilitator.settle(paymentPayload, paymentRequirements);
    log(`settle ${network} -> ${out.success ? `ok ${out.transaction}` : `failed: ${out.errorReason} ${out.errorMessage || ''}`}`);
    return send(res, out.success ? 200 : control.failureStatus, out);
  } catch (e) {
    const message = String(e?.message || e);
    log(`${kind} ${network} threw: ${message}`);
    const payer = paymentPayload?.payload?.authorization?.from;
    if (kind === 'verify') return send(res, 400, { isValid: false, invalidReason: 'invalid_request', invalidMessage: message, payer });
    return send(res, 400, { success: false, errorReason: 'invalid_request', errorMessage: message, payer, transaction: '', network: network || '' });
  }
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  try {
    if (req.method === 'GET' && url.pathname === '/supported') return send(res, 200, facilitator.getSupported());
    if (req.method === 'POST' && url.pathname === '/verify') return await handlePayment('verify', req, res);
    if (req.method === 'POST' && url.pathname === '/settle') return await handlePayment('settle', req, res);
    if (url.pathname === '/_test/config') {
      if (req.method === 'POST') {
        const c = await readJSON(req);
        if (c.delayMs !== undefined) control.delayMs = Number(c.delayMs) || 0;
        if (c.failureStatus !== undefined) control.failureStatus = Number(c.failureStatus) || 200;
        log(`test config: ${JSON.stringify(control)}`);
      }
      return send(res, 200, control);
    }
    send(res, 404, { error: 'not found' });
  } catch (e) {
    log('request failed:', e);
    if (!res.headersSent) send(res, 500, { error: String(e?.message || e) });
  }
});

server.listen(port, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  const networks = [...(rpc ? [NETWORK] : []), ...(svmRPC ? [SOLANA_NETWORK] : [])];
  log(`facilitator on ${url}, settling on ${networks.join(', ')} via ${[rpc, svmRPC].filter(Boolean).join(', ')}`);
  console.log(JSON.stringify({ url, ...(account ? { address: account.address, network: NETWORK } : {}), networks }));
});

const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
