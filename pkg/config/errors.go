package config

import "errors"

var (
	// ErrInvalid is matched (errors.Is) by the *ValidationError Validate returns.
	ErrInvalid = errors.New("invalid config")
	// ErrMultipleDocuments means the file holds more than one YAML document;
	// turnd reads exactly one, and silently ignoring the rest would hide mistakes.
	ErrMultipleDocuments = errors.New("config file must hold one YAML document")
)
