"""The demo dataset `balance serve --demo` loads (made by `balance simulate --demo-set`)."""
