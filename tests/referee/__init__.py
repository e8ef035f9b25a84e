"""Independent, spec-literal referees: a second opinion against the product's rules engine."""
