package service

// FreshAttestationsBurst is the attestation ration's burst, for the external tests that spend it.
const FreshAttestationsBurst = freshAttestationsBurst
