package limiter

import "github.com/sluicehq/sluice/limiter/control"

// Config holds the limiter's options: the controller's Config (package
// control).
type Config = control.Config

// AIMDConfig tunes the classic AIMD rules: the controller's (package
// control).
type AIMDConfig = control.AIMDConfig

// CUBICConfig tunes the classic CUBIC rules: the controller's (package
// control).
type CUBICConfig = control.CUBICConfig

// DefaultConfig returns the documented defaults (control.DefaultConfig).
func DefaultConfig() Config { return control.DefaultConfig() }

// ControllerAIMD is the controller's ControllerAIMD (package control).
const ControllerAIMD = control.ControllerAIMD

// ControllerCUBIC is the controller's ControllerCUBIC (package control).
const ControllerCUBIC = control.ControllerCUBIC
