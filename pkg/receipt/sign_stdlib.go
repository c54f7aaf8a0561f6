//go:build !amd64 || purego

package receipt

// fastSignerBuilt tells the tests which signer this build chooses outside FIPS mode.
const fastSignerBuilt = false

func chooseSigner() signer { return stdlibSigner }
