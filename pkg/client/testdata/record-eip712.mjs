// Records EIP-712 vectors for pkg/client's EVM payer with viem, the library @x402/evm signs with:
// for fixed keys, domains and TransferWithAuthorization messages, the domain separator, the struct
// hash, the digest (hashTypedData), the signer's address and the signature (signTypedData, RFC 6979
// deterministic, so the Go signer must produce the very same bytes). The Go tests read the JSON and
// never run Node. Offline; run it once from the repository root after `npm ci --prefix infra/x402`:
//
//   node pkg/client/testdata/record-eip712.mjs > pkg/client/testdata/eip712-vectors.json
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// viem is installed (pinned) in infra/x402, not beside this file, so resolve it from there.
const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', '..', '..', 'infra', 'x402', 'package.json'));
const { hashDomain, hashStruct, hashTypedData } = require('viem');
const { privateKeyToAccount } = require('viem/accounts');
const viemVersion = require('viem/package.json').version;

// The types @x402/evm signs (its authorizationTypes), with the domain type viem derives.
const types = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
};
const domainTypes = [
  { name: 'name', type: 'string' },
  { name: 'version', type: 'string' },
  { name: 'chainId', type: 'uint256' },
  { name: 'verifyingContract', type: 'address' },
];

const cases = [
  {
    why: "Base mainnet USDC's domain, anvil's public test key 0, the service's $0.02 price",
    privateKey: '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
    domain: { name: 'USD Coin', version: '2', chainId: 8453, verifyingContract: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' },
    to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    value: '20000', validAfter: '0', validBefore: '1790000060',
    nonce: '0x0000000000000000000000000000000000000000000000000000000000000001',
  },
  {
    why: "Base Sepolia USDC's domain (name USDC), anvil's test key 1, uint256 extremes",
    privateKey: '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
    domain: { name: 'USDC', version: '2', chainId: 84532, verifyingContract: '0x036CbD53842c5426634e7929541eC2318f3dCF7e' },
    to: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
    value: '115792089237316195423570985008687907853269984665640564039457584007913129639935',
    validAfter: '1', validBefore: '18446744073709551616',
    nonce: '0xffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff',
  },
  {
    why: 'a non-ASCII domain name (hashed as UTF-8), a large chain id and the smallest private key',
    privateKey: '0x0000000000000000000000000000000000000000000000000000000000000001',
    domain: { name: 'Dollar ✓ Ünïcode', version: '10', chainId: 4294967296, verifyingContract: '0x000000000000000000000000000000000000dEaD' },
    to: '0x0000000000000000000000000000000000000001',
    value: '1', validAfter: '0', validBefore: '60',
    nonce: '0x8f3a9c1e5b7d2f4a6c8e0b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a',
  },
];

const out = [];
for (const c of cases) {
  const account = privateKeyToAccount(c.privateKey);
  const message = {
    from: account.address, to: c.to, value: BigInt(c.value),
    validAfter: BigInt(c.validAfter), validBefore: BigInt(c.validBefore), nonce: c.nonce,
  };
  const typed = { domain: c.domain, types, primaryType: 'TransferWithAuthorization', message };
  out.push({
    why: c.why,
    privateKey: c.privateKey,
    address: account.address,
    domain: c.domain,
    message: { from: account.address, to: c.to, value: c.value, validAfter: c.validAfter, validBefore: c.validBefore, nonce: c.nonce },
    domainSeparator: hashDomain({ domain: c.domain, types: { EIP712Domain: domainTypes } }),
    structHash: hashStruct({ data: message, primaryType: 'TransferWithAuthorization', types }),
    digest: hashTypedData(typed),
    signature: await account.signTypedData(typed),
  });
}
console.log(JSON.stringify({ recordedWith: `viem@${viemVersion}`, vectors: out }, null, 2));
