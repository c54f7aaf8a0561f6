package apperr

import "strconv"

// MaxProblems is how many problems one 422 lists: the problems past MaxProblems-1 are counted
// in one last entry, so that the answer stays small whatever the input.
const MaxProblems = 50

// Problems collects field problems so that one 422 can name all of them, up to MaxProblems. The
// zero value is empty and ready to use.
type Problems struct {
	List    []FieldProblem
	Omitted int
}

// Add files one problem, or counts it when the list is full.
func (p *Problems) Add(field, problem, fix string) {
	if len(p.List) >= MaxProblems-1 {
		p.Omitted++
		return
	}
	p.List = append(p.List, FieldProblem{Field: field, Problem: problem, Fix: fix})
}

// Count is how many problems were found, listed or not.
func (p *Problems) Count() int { return len(p.List) + p.Omitted }

// Err is the 422 naming the problems found.
func (p *Problems) Err() error {
	list := p.List
	if p.Omitted > 0 {
		more := "1 more problem"
		if p.Omitted > 1 {
			more = strconv.Itoa(p.Omitted) + " more problems"
		}
		list = append(list, FieldProblem{Field: "body", Problem: "has " + more,
			Fix: "Fix the problems named and send the request again to see the rest."})
	}
	return Invalid(list...)
}
