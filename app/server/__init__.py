"""The server's plumbing: the session builder, shared byte-bounded caches, the event loop and the log."""
