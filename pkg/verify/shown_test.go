package verify

// checkShown is a failure as a report writes it (Failure.Show) with its check name, so that tests
// compare what a caller reads.
type checkShown struct{ Check, Path, Field, Expected, Found, Detail string }

func shownOf(f Failure) checkShown {
	s := f.Show()
	return checkShown{f.Check, s.Path, s.Field, s.Expected, s.Found, s.Detail}
}

func shownAll(fs []Failure) []checkShown {
	var out []checkShown
	for _, f := range fs {
		out = append(out, shownOf(f))
	}
	return out
}

// textKind is a Kind that answers given texts.
type textKind struct{ expected, found, detail string }

func (k textKind) Texts() (string, string, string) { return k.expected, k.found, k.detail }
