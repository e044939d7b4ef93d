package seatbelt

// StartError means the sandbox could not be set up; the target never ran
// (exit 125 by convention).
type StartError struct{ Err error }

func (e *StartError) Error() string { return "sandbox failed to start: " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }
