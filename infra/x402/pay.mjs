// Pays for one HTTP request with the real x402 v2 client, @x402/fetch's wrapFetchWithPayment over
// @x402/evm's exact scheme (an EIP-3009 authorization signed by a viem local account) and/or
// @x402/svm's (an SPL token transfer signed by the payer, for the facilitator to co-sign as fee
// payer), and prints one JSON line describing what happened on stdout. Logs go to stderr.
//
//   node pay.mjs --url URL [--method POST] [--body-file F] [--header 'Name: value']... [options]
//   node pay.mjs --sign-required FILE [options]     (sign only, send nothing)
//
// The EVM payer's key comes from --key or, preferably, the PAY_KEY environment variable; the
// Solana payer's 32-byte seed (hex) from PAY_SVM_KEY, with --svm-rpc naming the Solana RPC
// (svm-node.mjs) the client reads the mint and a recent blockhash from. With both, the client pays
// on whichever network the server's requirements list first.
//
// Options that craft bad payments (they act on the requirement the client picked, before signing):
//   --tamper field=value   change the requirement before it is signed, so the signed authorization
//                          and the payload's `accepted` both carry the change. Fields: amount, asset,
//                          payTo, network, scheme, maxTimeoutSeconds, extra.name, extra.version.
//                          Repeatable. (This is how a client would try to pay less, pay another
//                          token, pay someone else or pay on another chain.)
//   --keep-accepted        after signing, put the server's original requirement back in `accepted`,
//                          so only the signature disagrees with the server (the facilitator's verify
//                          must catch it, not the server's requirement matching).
//   --bad-signature        flip bytes of the signature after signing (on Solana, of the payer's
//                          signature in the transaction).
//   --signature B64        send exactly this PAYMENT-SIGNATURE header with a plain fetch (a replay);
//                          no client, no 402 round trip.
//
// Output (one line): {"status", "headers": {<lower-case name>: value, ...}, "body",
//   "paymentSignature": the PAYMENT-SIGNATURE header sent ("" if none), "payment": its decoded
//   PaymentPayload, "paymentRequired": the decoded PAYMENT-REQUIRED of the first 402 answer,
//   "paymentResponse": the decoded PAYMENT-RESPONSE of the final answer, "requests": how many
//   HTTP requests were made, "error": set when the client gave up (nothing else is then certain)}.
// With --sign-required the line is {"payment", "paymentSignature"} (or {"error"}).
import fs from 'node:fs';
import { wrapFetchWithPayment, x402Client, x402HTTPClient } from '@x402/fetch';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { createKeyPairSignerFromPrivateKeyBytes } from '@solana/kit';
import { privateKeyToAccount } from 'viem/accounts';
import { log, parseArgs } from './common.mjs';

const opts = parseArgs(process.argv.slice(2), ['keep-accepted', 'bad-signature']);
const list = (v) => (v === undefined ? [] : [].concat(v));

// decode reads a base64 JSON header, or returns undefined when it is absent or not JSON.
function decode(header) {
  if (!header) return undefined;
  try {
    return JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
  } catch {
    return undefined;
  }
}

// tamper applies the --tamper edits to one payment requirement and returns the changed copy.
function tamper(requirement) {
  const r = structuredClone(requirement);
  for (const edit of list(opts.tamper)) {
    const eq = edit.indexOf('=');
    if (eq < 1) throw new Error(`--tamper wants field=value, got ${edit}`);
    const field = edit.slice(0, eq);
    const value = edit.slice(eq + 1);
    switch (field) {
      case 'amount': case 'asset': case 'payTo': case 'network': case 'scheme':
        r[field] = value; break;
      case 'maxTimeoutSeconds':
        r[field] = Number(value); break;
      case 'extra.name': case 'extra.version':
        r.extra = { ...(r.extra || {}), [field.slice(6)]: value }; break;
      default:
        throw new Error(`--tamper: unknown field ${field}`);
    }
  }
  return r;
}

// newClient builds the x402 client for the payer, with the tampering hooks the options ask for.
async function newClient() {
  const key = opts.key || process.env.PAY_KEY;
  const svmKey = process.env.PAY_SVM_KEY;
  if (!key && !svmKey) throw new Error('no payer key: set PAY_KEY (EVM) or PAY_SVM_KEY (Solana), or pass --key');
  const client = new x402Client();
  if (key) client.register('eip155:*', new ExactEvmScheme(privateKeyToAccount(key)));
  if (svmKey) {
    if (!opts['svm-rpc']) throw new Error('PAY_SVM_KEY needs --svm-rpc, the Solana RPC URL');
    const signer = await createKeyPairSignerFromPrivateKeyBytes(Buffer.from(svmKey, 'hex'));
    client.register('solana:*', new ExactSvmScheme(signer, { rpcUrl: opts['svm-rpc'] }));
  }
  const original = new WeakMap(); // tampered requirement -> the server's original
  if (list(opts.tamper).length > 0) {
    // Policies run after the client's own filters (registered schemes, spend controls) and before
    // it picks a requirement and signs it, which is exactly where a tampering client would act.
    client.registerPolicy((_version, reqs) => reqs.map((r) => {
      const t = tamper(r);
      original.set(t, r);
      return t;
    }));
  }
  client.onAfterPaymentCreation(async ({ paymentPayload, selectedRequirements }) => {
    // The hook gets the payload object the client returns, so editing it in place changes what is
    // sent.
    if (opts['keep-accepted'] && original.has(selectedRequirements)) {
      paymentPayload.accepted = original.get(selectedRequirements);
    }
    if (opts['bad-signature'] && typeof paymentPayload.payload?.signature === 'string') {
      const s = paymentPayload.payload.signature;
      paymentPayload.payload.signature = s.slice(0, 10) + (s[10] === 'a' ? 'b' : 'a') + s.slice(11);
    }
    if (opts['bad-signature'] && typeof paymentPayload.payload?.transaction === 'string') {
      // The wire transaction starts with the signature count (one byte here) and the signatures,
      // the fee payer's (still empty) first and the payer's second.
      const tx = Buffer.from(paymentPayload.payload.transaction, 'base64');
      tx[1 + 64 + 10] ^= 0xff;
      paymentPayload.payload.transaction = tx.toString('base64');
    }
  });
  return client;
}

async function signOnly(file) {
  const paymentRequired = JSON.parse(fs.readFileSync(file, 'utf8'));
  const client = await newClient();
  const payment = await client.createPaymentPayload(paymentRequired);
  const headers = new x402HTTPClient(client).encodePaymentSignatureHeader(payment);
  return { payment, paymentSignature: headers['PAYMENT-SIGNATURE'] || headers['X-PAYMENT'] || '' };
}

async function pay(out) {
  const url = opts.url || opts._[0];
  if (!url) throw new Error('no --url');
  const init = { method: opts.method || 'POST', headers: new Headers() };
  for (const h of list(opts.header)) {
    const colon = h.indexOf(':');
    if (colon < 1) throw new Error(`--header wants 'Name: value', got ${h}`);
    init.headers.append(h.slice(0, colon).trim(), h.slice(colon + 1).trim());
  }
  if (opts['body-file']) {
    init.body = fs.readFileSync(opts['body-file']);
    if (!init.headers.has('content-type')) init.headers.set('content-type', 'application/json');
  }

  // observed wraps the global fetch to record what the x402 client sends and receives.
  const observed = async (input, reqInit) => {
    const req = new Request(input, reqInit);
    out.requests++;
    const sig = req.headers.get('payment-signature');
    if (sig) out.paymentSignature = sig;
    const res = await fetch(req);
    if (res.status === 402 && out.paymentRequired === undefined) {
      out.paymentRequired = decode(res.headers.get('payment-required')) ?? null;
    }
    return res;
  };

  let res;
  if (opts.signature) {
    init.headers.set('PAYMENT-SIGNATURE', opts.signature);
    res = await observed(url, init);
  } else {
    res = await wrapFetchWithPayment(observed, await newClient())(url, init);
  }
  out.status = res.status;
  out.headers = Object.fromEntries([...res.headers].map(([k, v]) => [k.toLowerCase(), v]));
  out.body = await res.text();
  if (out.paymentSignature) out.payment = decode(out.paymentSignature);
  out.paymentResponse = decode(res.headers.get('payment-response'));
  return out;
}

// result collects what happened; on an error it still tells how far the client got.
let result = { requests: 0, paymentSignature: '' };
let code = 0;
try {
  result = opts['sign-required'] ? await signOnly(opts['sign-required']) : await pay(result);
} catch (e) {
  log('pay:', e?.stack || e);
  result = { ...result, error: String(e?.message || e) };
  code = 1;
}
console.log(JSON.stringify(result));
process.exit(code);
