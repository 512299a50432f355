"""The token-level batch an engine runs: sequences, the ragged flattened batch, per-request sampling."""
