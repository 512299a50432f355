"""The chapter's worked cases: its traffic, the worked example, the per-step reference loop, the exercises' cores."""
