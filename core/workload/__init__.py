"""What arrives: the per-request record, seeded synthetic traffic and trace files."""
