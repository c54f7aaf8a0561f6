// Records x402 v2 headers made by the real @x402 npm packages, for pkg/x402's Go tests, and
// checks that the Go-encoded golden headers decode with the same packages. Not run by go test;
// see README.md for how to run it. Offline: nothing here talks to a chain or a facilitator.
//
//   node record.mjs <testdata dir>
import fs from 'node:fs';
import path from 'node:path';
import { x402Client } from '@x402/core/client';
import { x402Facilitator } from '@x402/core/facilitator';
import {
  x402HTTPClient,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
  decodePaymentSignatureHeader,
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
} from '@x402/core/http';
import { PaymentPayloadV2Schema, PaymentRequiredV2Schema } from '@x402/core/schemas';
import { toFacilitatorEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { ExactEvmScheme as ExactEvmFacilitatorScheme } from '@x402/evm/exact/facilitator';
import { privateKeyToAccount } from 'viem/accounts';

const dir = process.argv[2];
if (!dir) throw new Error('usage: node record.mjs <pkg/x402/testdata>');
const read = (f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
const write = (f, v) => fs.writeFileSync(path.join(dir, f), JSON.stringify(v, null, 2) + '\n');

// The installed versions, read from node_modules of the directory the script runs in.
const versions = Object.fromEntries(['@x402/core', '@x402/evm', '@x402/fetch', 'viem'].map(
  (p) => [p, JSON.parse(fs.readFileSync(path.join('node_modules', p, 'package.json'), 'utf8')).version]));

// Anvil's well-known account 0: a public test key, never funded anywhere that matters.
const PRIVATE_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const account = privateKeyToAccount(PRIVATE_KEY);

const fixture = read('requirements.json');

// 1. PAYMENT-REQUIRED, encoded by the package the way x402HTTPResourceServer does.
const paymentRequiredHeader = encodePaymentRequiredHeader(fixture.paymentRequired);

// 2. PAYMENT-SIGNATURE, built the way @x402/fetch's wrapFetchWithPayment does: decode the 402
//    answer's header, let x402Client pick a requirement and sign it (EIP-3009 over EIP-712), then
//    x402HTTPClient.encodePaymentSignatureHeader.
const client = new x402Client().register('eip155:*', new ExactEvmScheme(account));
const httpClient = new x402HTTPClient(client);
const paymentRequired = httpClient.getPaymentRequiredResponse(
  (name) => (name.toUpperCase() === 'PAYMENT-REQUIRED' ? paymentRequiredHeader : null));
const paymentPayload = await httpClient.createPaymentPayload(paymentRequired);
const signatureHeaders = httpClient.encodePaymentSignatureHeader(paymentPayload);
const paymentSignatureHeader = signatureHeaders['PAYMENT-SIGNATURE'];
if (!paymentSignatureHeader) throw new Error('no PAYMENT-SIGNATURE header: ' + JSON.stringify(signatureHeaders));

// 3. PAYMENT-RESPONSE for a settled and a failed payment.
const accepted = paymentPayload.accepted;
const settled = { success: true, payer: account.address, transaction: fixture.settlement.transaction, network: accepted.network };
const failed = { success: false, errorReason: fixture.settlement.failureReason, payer: account.address, transaction: '', network: accepted.network };

write('npm-headers.json', {
  comment: 'Recorded by record.mjs with the @x402 packages below; the signer is anvil account 0. Do not edit by hand.',
  versions,
  payer: account.address,
  'PAYMENT-REQUIRED': { header: paymentRequiredHeader, json: decodePaymentRequiredHeader(paymentRequiredHeader) },
  'PAYMENT-SIGNATURE': { header: paymentSignatureHeader, json: decodePaymentSignatureHeader(paymentSignatureHeader) },
  'PAYMENT-RESPONSE': { header: encodePaymentResponseHeader(settled), json: settled },
  'PAYMENT-RESPONSE-failed': { header: encodePaymentResponseHeader(failed), json: failed },
});

// 4. GET /supported as @x402/core's facilitator answers it (EVM only: @x402/svm is not part of
//    the pinned set). The signer's chain methods are never called by getSupported.
const unused = () => { throw new Error('not used by getSupported'); };
const facilitator = new x402Facilitator().register(['eip155:8453', 'eip155:84532'], new ExactEvmFacilitatorScheme(
  toFacilitatorEvmSigner({
    address: account.address, getCode: unused, readContract: unused, verifyTypedData: unused,
    writeContract: unused, sendTransaction: unused, waitForTransactionReceipt: unused,
  })));
write('supported-evm.json', facilitator.getSupported());

// 5. The Go-encoded golden headers (go-encoded.json, written by `go test -run TestGoEncodedGolden
//    -update`) decoded and schema-checked by the package.
const goEncoded = read('go-encoded.json');
const decoded = {};
const check = (schema, v) => { const r = schema.safeParse(v); return r.success ? 'ok' : r.error.message; };
for (const [name, header] of Object.entries(goEncoded.headers)) {
  if (name.startsWith('PAYMENT-SIGNATURE')) {
    const v = decodePaymentSignatureHeader(header);
    decoded[name] = { json: v, schema: check(PaymentPayloadV2Schema, v) };
  } else if (name.startsWith('PAYMENT-REQUIRED')) {
    const v = decodePaymentRequiredHeader(header);
    decoded[name] = { json: v, schema: check(PaymentRequiredV2Schema, v) };
  } else if (name.startsWith('PAYMENT-RESPONSE')) {
    const v = decodePaymentResponseHeader(header);
    decoded[name] = { json: v, schema: typeof v.success === 'boolean' ? 'ok' : 'success missing' };
  } else {
    throw new Error('unknown header ' + name);
  }
}
// The client side too: the package must be able to pay from the Go-encoded 402 answer.
const fromGo = httpClient.getPaymentRequiredResponse(
  (name) => (name.toUpperCase() === 'PAYMENT-REQUIRED' ? goEncoded.headers['PAYMENT-REQUIRED'] : null));
const paidFromGo = await httpClient.createPaymentPayload(fromGo);
write('go-encoded.npm-decoded.json', {
  comment: 'Written by record.mjs: the headers of go-encoded.json as @x402/core decodes them, its zod schema verdicts, and whether x402Client could sign a payment for the Go-encoded PAYMENT-REQUIRED.',
  versions,
  decoded,
  clientSignedFromGoPaymentRequired: {
    accepted: paidFromGo.accepted,
    hasSignature: typeof paidFromGo.payload?.signature === 'string',
    schema: check(PaymentPayloadV2Schema, paidFromGo),
  },
});
console.log('recorded into', dir);
