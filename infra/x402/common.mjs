// Shared constants and helpers of the local x402 harness: the chain, the token, the test accounts
// and a small argument parser. Everything here is test-only; no key below holds anything of value.
import { defineChain } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

// CHAIN_ID is Base mainnet's: anvil runs with --chain-id 8453 so that the payment requirements,
// the EIP-712 domain and the CAIP-2 network id are exactly the production ones.
export const CHAIN_ID = 8453;
export const NETWORK = `eip155:${CHAIN_ID}`;

// USDC_BASE is Base mainnet USDC's address; the harness places TestUSDC's runtime code there.
export const USDC_BASE = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';

// The EIP-712 domain of Base mainnet USDC (FiatTokenV2_2); TestUSDC hard-codes the same values.
export const USDC_DOMAIN = { name: 'USD Coin', version: '2' };
export const USDC_DECIMALS = 6;

// Anvil's default development keys (derived from the public "test test ... junk" mnemonic,
// indices 0-4). Roles: 0 settles as the facilitator, 1 and 3 pay, 2 is paid, 4 holds no tokens.
const KEYS = {
  facilitator: '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  payer: '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  payee: '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  payer2: '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  unfunded: '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a',
};

// ACCOUNTS maps each role to its key and checksummed address.
export const ACCOUNTS = Object.fromEntries(
  Object.entries(KEYS).map(([role, key]) => [role, { key, address: privateKeyToAccount(key).address }]),
);

// localBase is the anvil chain as viem sees it: Base's id, the given RPC URL.
export function localBase(rpc) {
  return defineChain({
    id: CHAIN_ID,
    name: 'local-base (anvil)',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpc] } },
  });
}

// SOLANA_NETWORK is Solana mainnet's CAIP-2 id, which svm-node.mjs's LiteSVM claims, and
// USDC_SOLANA mainnet USDC's mint address, where it places the test mint.
export const SOLANA_NETWORK = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp';
export const USDC_SOLANA = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';

// SVM_KEYS are the Solana test accounts' 32-byte Ed25519 seeds (hex), made up for the harness:
// the facilitator's fee payer, a funded payer, the payee, an account with an empty token account,
// and the test mint's authority.
export const SVM_KEYS = {
  facilitator: '01'.repeat(32),
  payer: '02'.repeat(32),
  payee: '03'.repeat(32),
  unfunded: '04'.repeat(32),
  mintAuthority: '05'.repeat(32),
};

// parseArgs reads `--name value` and bare `--flag` options into an object (repeated options become
// arrays) and collects the rest as positionals. Flags listed in `booleans` take no value.
export function parseArgs(argv, booleans = []) {
  const opts = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) { opts._.push(a); continue; }
    const eq = a.indexOf('=');
    let name; let value;
    if (eq > 0) { name = a.slice(2, eq); value = a.slice(eq + 1); }
    else if (booleans.includes(a.slice(2))) { name = a.slice(2); value = true; }
    else {
      name = a.slice(2);
      if (i + 1 >= argv.length) throw new Error(`option --${name} needs a value`);
      value = argv[++i];
    }
    if (name in opts) opts[name] = [].concat(opts[name], value);
    else opts[name] = value;
  }
  return opts;
}

// log writes a diagnostic line to stderr; stdout carries only the scripts' JSON results.
export function log(...args) {
  console.error(`[${new Date().toISOString()}]`, ...args);
}
