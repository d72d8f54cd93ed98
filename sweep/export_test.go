package sweep

// Defaults is the test options helper, for the external tests.
var Defaults = defaults
