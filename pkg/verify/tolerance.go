package verify

import (
	"math/big"

	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// tolerance is a rule's tolerance prepared once per rule: as a decimal when it is one (every
// tolerance decoded from a JSON literal is), else kept as the rational it is.
type tolerance struct {
	d     jsonvalue.Decimal
	r     *big.Rat
	exact bool // d holds the tolerance
}

// newTolerance prepares r (nil means the default, SPEC §4.3). The default is prepared once and
// shared: evaluation only reads a tolerance.
func newTolerance(r *big.Rat) *tolerance {
	if r == nil || isDefaultTolerance(r) {
		return defaultTol
	}
	t := &tolerance{r: r}
	if d, err := jsonvalue.DecimalOfRat(r); err == nil {
		t.d.Set(d)
		t.exact = true
	}
	return t
}

// calc is the rules' decimal arithmetic with the comparison against a tolerance.
type calc struct{ jsonvalue.Calc }

// within tells whether |diff| ≤ t. It may change diff's sign.
func (c *calc) within(diff *jsonvalue.Decimal, t *tolerance) bool {
	diff.Abs()
	if t.exact {
		return c.Cmp(diff, &t.d) <= 0
	}
	return diff.Rat().Cmp(t.r) <= 0
}

// defaultToleranceRat is DefaultTolerance as a number and defaultTol the same prepared.
var (
	defaultToleranceRat, _ = new(big.Rat).SetString(wire.DefaultTolerance)
	defaultTol             = func() *tolerance {
		t := &tolerance{r: defaultToleranceRat, exact: true}
		d, _ := jsonvalue.DecimalOfRat(defaultToleranceRat)
		t.d.Set(d)
		return t
	}()
	billion = big.NewInt(1e9)
)

// isDefaultTolerance tells, without allocating, whether r is 1e-9.
func isDefaultTolerance(r *big.Rat) bool {
	return r.Num().IsInt64() && r.Num().Int64() == 1 && r.Denom().Cmp(billion) == 0
}

// isDefault tells whether the tolerance is the default one, which messages leave unsaid.
func (t *tolerance) isDefault() bool { return isDefaultTolerance(t.r) }
