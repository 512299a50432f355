"""Browser tests: the served app in real headless Chromium, read back from its pixels."""
