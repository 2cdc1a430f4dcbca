package runtime

// SharedConns reports the shared response connections rt holds: those it
// accepted as a caller and those it dialled (or is dialling) as a worker.
func SharedConns(rt *DistributedRuntime) (accepted, dialled int) {
	if s := rt.streamsIfStarted(); s != nil {
		accepted = s.SharedConns()
	}
	return accepted, rt.mux.Size()
}

// BreakSharedConns closes the shared response connections rt accepted as
// a caller, as a network failure would.
func BreakSharedConns(rt *DistributedRuntime) {
	s := rt.streamsIfStarted()
	if s != nil {
		s.BreakShared()
	}
}
