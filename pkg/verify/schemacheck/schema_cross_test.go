package schemacheck

// crossCheck runs the walker and then the library's own Validate on the same instance, for the
// differential tests: the library is the authority the walker is held to.
func (s *Schema) crossCheck(instance any) schCheckResult {
	r := s.walk(instance, reportKeep, nil)
	if r.over {
		// Over the evaluation budget the walker fails closed and the library is not asked: it
		// would take as long or longer and cannot be interrupted.
		r.libValid = r.walkerValid
		return r
	}
	r.libValid = s.lib.Validate(instance) == nil
	return r
}
