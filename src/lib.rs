//! Nothing here: this package holds the examples, integration tests and benchmarks.
