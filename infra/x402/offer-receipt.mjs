// Checks a paid call's x402 offer-receipt artifacts with @x402/extensions' own verifiers, as an
// x402 client would: the signed offers of the 402 answer (verifyOfferSignatureJWS), the signed
// receipt of the settlement response (verifyReceiptSignatureJWS), each with the server's published
// key and again with the key resolved from the JWS kid (did:web, fetched from the server's
// /.well-known/did.json), and the receipt matched to each offer (verifyReceiptMatchesOffer).
// Prints one JSON line on stdout; logs go to stderr.
//
//   node offer-receipt.mjs --in FILE
//
// FILE holds {"paymentRequired": <the decoded PAYMENT-REQUIRED>, "paymentResponse": <the
// PAYMENT-RESPONSE header, base64>, "payer": <the paying address>, "jwk": <the server's current
// key as a JWK>}.
//
// Output: {"offers": [{"acceptIndex", "kid", "payload" (verified with the JWK), "payloadByDid"
// (verified with the kid's did:web key), "matchesReceipt", "matchesOtherPayer"}], "receipt":
// {"kid", "payload", "payloadByDid"}, "tamperedReceiptRejected", "errors": [...]}. A check that
// throws is reported in errors (and leaves its field out); the script exits 0 unless it could not
// run at all.
import fs from 'node:fs';
import { decodePaymentResponseHeader } from '@x402/core/http';
import {
  decodeSignedOffers,
  extractJWSHeader,
  extractOffersFromPaymentRequired,
  verifyOfferSignatureJWS,
  verifyReceiptMatchesOffer,
  verifyReceiptSignatureJWS,
} from '@x402/extensions/offer-receipt';
import { log, parseArgs } from './common.mjs';

const opts = parseArgs(process.argv.slice(2));
if (!opts.in) throw new Error('--in FILE is required');
const input = JSON.parse(fs.readFileSync(opts.in, 'utf8'));
const errors = [];

// attempt runs one check and records what it threw instead of stopping the others.
async function attempt(name, fn) {
  try {
    return await fn();
  } catch (e) {
    errors.push(`${name}: ${e instanceof Error ? e.message : e}`);
    return undefined;
  }
}

const out = { offers: [], receipt: {}, errors };
const signed = extractOffersFromPaymentRequired(input.paymentRequired);
const settlement = decodePaymentResponseHeader(input.paymentResponse);
const receipt = settlement.extensions?.['offer-receipt']?.info?.receipt;
if (!receipt) errors.push('the settlement response carries no offer-receipt receipt');

for (const decoded of decodeSignedOffers(signed)) {
  const offer = decoded.signedOffer;
  const o = { acceptIndex: decoded.acceptIndex, kid: extractJWSHeader(offer.signature).kid };
  o.payload = await attempt(`offer ${decoded.acceptIndex} with the JWK`, () => verifyOfferSignatureJWS(offer, input.jwk));
  o.payloadByDid = await attempt(`offer ${decoded.acceptIndex} by did:web`, () => verifyOfferSignatureJWS(offer));
  if (receipt) {
    o.matchesReceipt = verifyReceiptMatchesOffer(receipt, decoded, [input.payer]);
    o.matchesOtherPayer = verifyReceiptMatchesOffer(receipt, decoded, ['0x000000000000000000000000000000000000dEaD']);
  }
  out.offers.push(o);
}

if (receipt) {
  out.receipt.kid = extractJWSHeader(receipt.signature).kid;
  out.receipt.payload = await attempt('receipt with the JWK', () => verifyReceiptSignatureJWS(receipt, input.jwk));
  out.receipt.payloadByDid = await attempt('receipt by did:web', () => verifyReceiptSignatureJWS(receipt));
  // The same receipt naming another payer must not verify: the check can fail.
  const [h, p, s] = receipt.signature.split('.');
  const forged = JSON.parse(Buffer.from(p, 'base64url').toString('utf8'));
  forged.payer = '0x000000000000000000000000000000000000dEaD';
  const tampered = { ...receipt, signature: `${h}.${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${s}` };
  try {
    await verifyReceiptSignatureJWS(tampered, input.jwk);
    out.tamperedReceiptRejected = false;
  } catch {
    out.tamperedReceiptRejected = true;
  }
}
log(`checked ${out.offers.length} offer(s) and ${receipt ? 'a' : 'no'} receipt`);
console.log(JSON.stringify(out));
