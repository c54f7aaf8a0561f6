// Prepares a running anvil (started by the caller, chain id 8453) for x402 payments: places
// TestUSDC's runtime code at the Base USDC address, mints tokens to the payers and prints one JSON
// line describing the chain on stdout. It starts nothing and talks only to the given RPC URL.
//
//   node setup-chain.mjs --rpc http://127.0.0.1:8545 [--mint 1000000000]
//
// TestUSDC has no constructor state and no immutables, so its runtime code alone is a working token
// at any address: anvil_setCode is enough, and no storage needs initialising (balances and used
// authorizations start empty, as mappings do). The name/version the EIP-712 domain uses are
// constants in the code, so signatures made for Base USDC's domain verify against it.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPublicClient, createWalletClient, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { ACCOUNTS, CHAIN_ID, NETWORK, USDC_BASE, USDC_DECIMALS, USDC_DOMAIN, localBase, log, parseArgs } from './common.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const opts = parseArgs(process.argv.slice(2));
const rpc = opts.rpc || process.env.RPC_URL;
if (!rpc) {
  console.error('usage: node setup-chain.mjs --rpc <anvil RPC URL> [--mint <atomic units per payer>]');
  process.exit(2);
}
// Default: 1000 USDC per payer, 50,000 calls at $0.02.
const mint = BigInt(opts.mint || '1000000000');

const art = JSON.parse(fs.readFileSync(path.join(here, 'TestUSDC.json'), 'utf8'));
const chain = localBase(rpc);
const pub = createPublicClient({ chain, transport: http(rpc) });
const admin = createWalletClient({ account: privateKeyToAccount(ACCOUNTS.facilitator.key), chain, transport: http(rpc) });

const chainId = await pub.getChainId();
if (chainId !== CHAIN_ID) throw new Error(`anvil at ${rpc} runs chain ${chainId}, want ${CHAIN_ID} (start it with --chain-id ${CHAIN_ID})`);

await pub.request({ method: 'anvil_setCode', params: [USDC_BASE, art.deployedBytecode] });

// Mint through ordinary transactions (anvil mines each at once) so the ledger starts with real
// Transfer events and a consistent totalSupply.
for (const role of ['payer', 'payer2']) {
  const hash = await admin.writeContract({ address: USDC_BASE, abi: art.abi, functionName: 'mint', args: [ACCOUNTS[role].address, mint] });
  const rc = await pub.waitForTransactionReceipt({ hash });
  if (rc.status !== 'success') throw new Error(`mint to ${role} failed in ${hash}`);
}

const read = (functionName, args = []) => pub.readContract({ address: USDC_BASE, abi: art.abi, functionName, args });
const [name, version, decimals, balance] = await Promise.all([read('name'), read('version'), read('decimals'), read('balanceOf', [ACCOUNTS.payer.address])]);
if (name !== USDC_DOMAIN.name || version !== USDC_DOMAIN.version || decimals !== USDC_DECIMALS || balance !== mint) {
  throw new Error(`token check failed: name=${name} version=${version} decimals=${decimals} payer balance=${balance}`);
}
log(`setup-chain: TestUSDC at ${USDC_BASE} on chain ${chainId}; minted ${mint} to payer and payer2`);

console.log(JSON.stringify({
  rpc,
  chainId,
  network: NETWORK,
  token: USDC_BASE,
  name,
  version,
  decimals,
  minted: mint.toString(),
  facilitator: ACCOUNTS.facilitator.address,
  payer: ACCOUNTS.payer.address,
  payerKey: ACCOUNTS.payer.key,
  payer2: ACCOUNTS.payer2.address,
  payer2Key: ACCOUNTS.payer2.key,
  payee: ACCOUNTS.payee.address,
  unfunded: ACCOUNTS.unfunded.address,
  unfundedKey: ACCOUNTS.unfunded.key,
}));
