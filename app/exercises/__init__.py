"""The chapter's three exercises as live views, each its own module over the core."""
