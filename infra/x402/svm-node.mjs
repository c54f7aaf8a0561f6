// A local Solana node for the x402 harness: LiteSVM (the Solana runtime with the SPL Token,
// Associated Token Account and Memo programs, in process) behind the subset of Solana's JSON-RPC
// that @x402/svm's client and facilitator use. It plays anvil's part for Solana: the payments are
// real transactions, signed by the real client, co-signed and submitted by the real facilitator,
// and executed by the real token program; only the network around the runtime is left out.
//
//   node svm-node.mjs [--port 0] [--mint 1000000000]
//
// At start it places a token mint at Solana mainnet USDC's address (6 decimals, as USDC), funds the
// facilitator's fee payer with SOL, gives the payer a token account holding --mint atomic units and
// the payee and the unfunded account empty ones. Once listening on 127.0.0.1 (port 0: the kernel
// picks one) it prints one JSON line on stdout: {rpc, network, mint, minted, feePayer, payer,
// payerKey, payerTokenAccount, payee, payeeTokenAccount, unfunded, unfundedKey, unfundedTokenAccount}
// (keys are 32-byte seeds in hex). Log lines go to stderr. SIGTERM stops it.
//
// JSON-RPC methods: getSlot, getBlockHeight, getLatestBlockhash, getBalance, getAccountInfo and
// getMultipleAccounts (base64, or jsonParsed for token accounts and mints), getTokenAccountBalance,
// simulateTransaction, sendTransaction and getSignatureStatuses. Every transaction executes at
// once and is final; a transaction sent again does not run again (its signature keeps the status
// of its one run), as on a cluster.
import http from 'node:http';
import { LiteSVM } from 'litesvm';
import { address, createKeyPairSignerFromPrivateKeyBytes, getBase58Decoder, getBase64Encoder, getTransactionDecoder } from '@solana/kit';
import {
  AccountState, TOKEN_PROGRAM_ADDRESS, findAssociatedTokenPda, getMintDecoder, getMintEncoder, getTokenDecoder, getTokenEncoder,
} from '@solana-program/token';
import { SOLANA_NETWORK, SVM_KEYS, USDC_DECIMALS, USDC_SOLANA, log, parseArgs } from './common.mjs';

const opts = parseArgs(process.argv.slice(2));
const port = Number(opts.port ?? 0);
// Default: 1000 USDC, as the EVM payers get.
const minted = BigInt(opts.mint || '1000000000');
// maxBody bounds a request body; a transaction is at most 1232 bytes.
const maxBody = 1 << 20;

const signer = (role) => createKeyPairSignerFromPrivateKeyBytes(Buffer.from(SVM_KEYS[role], 'hex'));
const [feePayer, payer, payee, unfunded, mintAuthority] = await Promise.all(
  ['facilitator', 'payer', 'payee', 'unfunded', 'mintAuthority'].map(signer));

const svm = new LiteSVM();
svm.airdrop(feePayer.address, 100_000_000_000n); // 100 SOL for fees

// place writes an account owned by the token program, rent-exempt.
function place(addr, data) {
  const bytes = new Uint8Array(data);
  svm.setAccount({
    address: addr, data: bytes, executable: false, programAddress: TOKEN_PROGRAM_ADDRESS, space: BigInt(bytes.length),
    lamports: svm.minimumBalanceForRentExemption(BigInt(bytes.length)),
  });
}
place(USDC_SOLANA, getMintEncoder().encode({
  mintAuthority: mintAuthority.address, supply: minted, decimals: USDC_DECIMALS, isInitialized: true, freezeAuthority: null,
}));
// tokenAccount places owner's associated token account for the mint, holding amount.
async function tokenAccount(owner, amount) {
  const [ata] = await findAssociatedTokenPda({ mint: USDC_SOLANA, owner, tokenProgram: TOKEN_PROGRAM_ADDRESS });
  place(ata, getTokenEncoder().encode({
    mint: USDC_SOLANA, owner, amount, delegate: null, state: AccountState.Initialized, isNative: null, delegatedAmount: 0n, closeAuthority: null,
  }));
  return ata;
}
const [payerTokenAccount, payeeTokenAccount, unfundedTokenAccount] = await Promise.all([
  tokenAccount(payer.address, minted), tokenAccount(payee.address, 0n), tokenAccount(unfunded.address, 0n)]);

const base58 = getBase58Decoder();
const txDecoder = getTransactionDecoder();
const base64 = getBase64Encoder();
let slot = 1;
const context = () => ({ slot, apiVersion: '2.2.0' });
const statuses = new Map(); // signature -> {slot, err}

// invalidParams is a JSON-RPC error for a request the node cannot serve.
function invalidParams(message) {
  return Object.assign(new Error(message), { code: -32602 });
}

function decodeTransaction(wire, encoding = 'base64') {
  if (encoding !== 'base64' || typeof wire !== 'string') throw invalidParams('transactions must be base64');
  return txDecoder.decode(base64.encode(wire));
}

// txError turns LiteSVM's transaction error into the JSON-RPC form ({"InstructionError":[0,...]}).
function txError(err) {
  return JSON.parse(JSON.stringify(err, (_, v) => (typeof v === 'bigint' ? Number(v) : v)) ?? 'null');
}

// uiAmount renders an atomic amount with the mint's decimals, as jsonParsed does.
function tokenAmount(amount, decimals) {
  const s = amount.toString().padStart(decimals + 1, '0');
  const ui = `${s.slice(0, -decimals)}.${s.slice(-decimals)}`.replace(/\.?0+$/, '');
  return { amount: amount.toString(), decimals, uiAmount: Number(ui), uiAmountString: ui };
}

// parsed is the jsonParsed data of a token program account, or undefined for any other.
function parsed(account) {
  if (account.programAddress !== TOKEN_PROGRAM_ADDRESS) return undefined;
  const space = account.data.length;
  if (space === 165) {
    const t = getTokenDecoder().decode(account.data);
    return { program: 'spl-token', space, parsed: { type: 'account', info: {
      mint: t.mint, owner: t.owner, state: 'initialized', isNative: false, tokenAmount: tokenAmount(t.amount, USDC_DECIMALS),
    } } };
  }
  if (space === 82) {
    const m = getMintDecoder().decode(account.data);
    return { program: 'spl-token', space, parsed: { type: 'mint', info: {
      decimals: m.decimals, isInitialized: m.isInitialized, supply: m.supply.toString(),
      mintAuthority: m.mintAuthority.__option === 'Some' ? m.mintAuthority.value : null, freezeAuthority: null,
    } } };
  }
  return undefined;
}

function accountInfo(addr, encoding = 'base64') {
  const a = svm.getAccount(address(addr));
  if (!a.exists) return null;
  const info = { executable: a.executable, lamports: Number(a.lamports), owner: a.programAddress, rentEpoch: 0, space: a.data.length };
  if (encoding === 'jsonParsed') {
    const p = parsed(a);
    if (p) return { ...info, data: p };
  } else if (encoding !== 'base64') {
    throw invalidParams(`encoding ${encoding} is not served; use base64 or jsonParsed`);
  }
  return { ...info, data: [Buffer.from(a.data).toString('base64'), 'base64'] };
}

const methods = {
  getSlot: () => slot,
  getBlockHeight: () => slot,
  getLatestBlockhash: () => ({ context: context(), value: { blockhash: svm.latestBlockhash(), lastValidBlockHeight: slot + 150 } }),
  getBalance: ([addr]) => ({ context: context(), value: Number(svm.getBalance(address(addr)) ?? 0n) }),
  getAccountInfo: ([addr, cfg]) => ({ context: context(), value: accountInfo(addr, cfg?.encoding) }),
  getMultipleAccounts: ([addrs, cfg]) => ({ context: context(), value: addrs.map((a) => accountInfo(a, cfg?.encoding)) }),
  getTokenAccountBalance: ([addr]) => {
    const info = accountInfo(addr, 'jsonParsed');
    if (info?.data?.parsed?.type !== 'account') throw invalidParams(`${addr} is not a token account`);
    return { context: context(), value: info.data.parsed.info.tokenAmount };
  },
  simulateTransaction: ([wire, cfg]) => {
    const tx = decodeTransaction(wire, cfg?.encoding);
    svm.withSigverify(cfg?.sigVerify ?? false);
    let r;
    try {
      r = svm.simulateTransaction(tx);
    } finally {
      svm.withSigverify(true);
    }
    const failed = typeof r.err === 'function';
    const meta = r.meta();
    return { context: context(), value: {
      err: failed ? txError(r.err()) : null, logs: meta.logs(), accounts: null, returnData: null,
      unitsConsumed: Number(meta.computeUnitsConsumed()), ...(cfg?.innerInstructions ? { innerInstructions: [] } : {}),
    } };
  },
  sendTransaction: ([wire, cfg]) => {
    const tx = decodeTransaction(wire, cfg?.encoding);
    const first = Object.values(tx.signatures)[0];
    if (!first) throw invalidParams('the transaction carries no fee payer signature');
    const signature = base58.decode(first);
    // A transaction processed before does not run again. A cluster's RPC, asked to skip the
    // preflight as x402 facilitators do, still answers with the signature, whose status stays
    // that of the first run; so does this node.
    if (statuses.has(signature)) {
      log(`transaction ${signature} was processed before; not run again`);
      return signature;
    }
    const r = svm.sendTransaction(tx);
    const failed = typeof r.err === 'function';
    slot += 1;
    statuses.set(signature, { slot, err: failed ? txError(r.err()) : null });
    log(`transaction ${signature} ${failed ? `failed: ${r.toString().slice(0, 300)}` : 'executed'}`);
    return signature;
  },
  getSignatureStatuses: ([sigs]) => ({ context: context(), value: sigs.map((s) => {
    const st = statuses.get(s);
    if (!st) return null;
    return { slot: st.slot, confirmations: null, err: st.err, confirmationStatus: 'finalized', status: st.err ? { Err: st.err } : { Ok: null } };
  }) }),
};

function call(msg) {
  const id = msg?.id ?? null;
  const f = Object.hasOwn(methods, msg?.method) ? methods[msg.method] : undefined;
  if (!f) {
    log(`method not served: ${msg?.method}`);
    return { jsonrpc: '2.0', id, error: { code: -32601, message: `Method not found: ${msg?.method}` } };
  }
  try {
    return { jsonrpc: '2.0', id, result: f(Array.isArray(msg.params) ? msg.params : []) };
  } catch (e) {
    return { jsonrpc: '2.0', id, error: { code: e.code ?? -32603, message: String(e?.message || e) } };
  }
}

const server = http.createServer(async (req, res) => {
  let reply;
  try {
    if (req.method !== 'POST') throw invalidParams('POST JSON-RPC only');
    let size = 0;
    const chunks = [];
    for await (const c of req) {
      size += c.length;
      if (size > maxBody) throw invalidParams(`body over ${maxBody} bytes`);
      chunks.push(c);
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    reply = Array.isArray(body) ? body.map(call) : call(body);
  } catch (e) {
    reply = { jsonrpc: '2.0', id: null, error: { code: e.code ?? -32700, message: String(e?.message || e) } };
  }
  const s = JSON.stringify(reply);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(s) });
  res.end(s);
});

server.listen(port, '127.0.0.1', () => {
  const rpc = `http://127.0.0.1:${server.address().port}`;
  log(`Solana node (LiteSVM) on ${rpc}, USDC mint ${USDC_SOLANA}`);
  console.log(JSON.stringify({
    rpc, network: SOLANA_NETWORK, mint: USDC_SOLANA, minted: minted.toString(), feePayer: feePayer.address,
    payer: payer.address, payerKey: SVM_KEYS.payer, payerTokenAccount,
    payee: payee.address, payeeTokenAccount,
    unfunded: unfunded.address, unfundedKey: SVM_KEYS.unfunded, unfundedTokenAccount,
  }));
});

const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
