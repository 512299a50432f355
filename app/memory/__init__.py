"""The Memory tab: one traffic on one KV pool, paged against contiguous against static."""
