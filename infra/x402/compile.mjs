// Compiles contracts/TestUSDC.sol with the pinned solc (solc-js) into TestUSDC.json, the artifact the
// harness places on chain. The artifact is committed so tests never wait for the compiler; run
// `node compile.mjs` after editing the contract, and `node compile.mjs --check` (the Go test
// TestArtifactMatchesSource does) to prove the committed artifact is what the source compiles to.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import solc from 'solc';

const here = path.dirname(fileURLToPath(import.meta.url));
const source = path.join(here, 'contracts', 'TestUSDC.sol');
const artifactPath = path.join(here, 'TestUSDC.json');

// The settings are part of the artifact's identity: changing them changes the bytecode.
const input = {
  language: 'Solidity',
  sources: { 'TestUSDC.sol': { content: fs.readFileSync(source, 'utf8') } },
  settings: {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: 'cancun',
    // No metadata hash: the bytecode then depends on the source and settings alone, not on the
    // file's path or comments' IPFS hash, so --check compares like with like.
    metadata: { bytecodeHash: 'none' },
    outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
  },
};

const out = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (out.errors || []).filter((e) => e.severity === 'error');
for (const e of out.errors || []) console.error(e.formattedMessage);
if (errors.length > 0) process.exit(1);

const c = out.contracts['TestUSDC.sol'].TestUSDC;
const artifact = {
  contract: 'TestUSDC',
  solc: solc.version(),
  abi: c.abi,
  bytecode: '0x' + c.evm.bytecode.object,
  deployedBytecode: '0x' + c.evm.deployedBytecode.object,
};
const text = JSON.stringify(artifact, null, 1) + '\n';

if (process.argv.includes('--check')) {
  const committed = fs.existsSync(artifactPath) ? fs.readFileSync(artifactPath, 'utf8') : '';
  if (committed !== text) {
    console.error('TestUSDC.json does not match contracts/TestUSDC.sol: run `node infra/x402/compile.mjs`');
    process.exit(1);
  }
  console.error(`TestUSDC.json matches contracts/TestUSDC.sol (solc ${solc.version()})`);
} else {
  fs.writeFileSync(artifactPath, text);
  console.error(`wrote TestUSDC.json (solc ${solc.version()}, runtime ${(c.evm.deployedBytecode.object.length / 2)} bytes)`);
}
