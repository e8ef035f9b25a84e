"""Differential testing of the Slow6 verifier against the spec-literal referee in
`tests/referee/`: the same records, legal and single-fault mutations of them, judged by both."""
