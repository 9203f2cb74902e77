package config

import "errors"

var (
	// ErrInvalid is matched (errors.Is) by the *ValidationError Validate returns.
	ErrInvalid = errors.New("invalid config")
	// ErrDecode is matched by a *ValidationError holding an unknown key or a
	// value of the wrong type.
	ErrDecode = errors.New("config does not decode")
	// ErrCoturnFile means the file given as a turnd config is a coturn
	// turnserver.conf, which `turnd import-coturn` converts.
	ErrCoturnFile = errors.New("this looks like a coturn turnserver.conf")
	// ErrMultipleDocuments means the file holds more than one YAML document;
	// turnd reads exactly one, and silently ignoring the rest would hide mistakes.
	ErrMultipleDocuments = errors.New("config file must hold one YAML document")
)
